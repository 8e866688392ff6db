#!/usr/bin/env bash
# scripts/check-meta.sh: check META.json (the PGXN distribution metadata)
# against the PGXN Meta Spec 1.0.0 and against the repository.
#
#   scripts/check-meta.sh [META.json]
#
# Checks the required keys (name, abstract, version, maintainer, license,
# provides, meta-spec) and the types of every key the spec defines; that
# versions are semantic versions (x.y.z); that the license is one of the
# spec's known names; that each extension in provides has a file and a
# version, that the files it names exist, and that its version is the
# default_version of its .control file (x.y read as x.y.0), and that
# debian/changelog's newest entry is the same version.  Prints every
# problem found and exits 1, or prints "META.json: ok".  Needs only python3.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
META=${1:-$ROOT/META.json}

command -v python3 >/dev/null 2>&1 || { echo "check-meta.sh: python3 not found" >&2; exit 2; }
[ -f "$META" ] || { echo "check-meta.sh: $META not found" >&2; exit 1; }

exec python3 - "$META" <<'PY'
import json, os, re, sys

path = sys.argv[1]
base = os.path.dirname(os.path.abspath(path))   # paths in META.json are relative to it
label = os.path.basename(path)
problems = []

def bad(msg):
    problems.append(msg)

# Semantic version, as the spec's schema writes it (SemVer 2.0.0).
SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
          r"(?:-(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
          r"(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?")
VERSION = re.compile("^" + SEMVER + "$")
RANGE_PART = re.compile(r"^(?:(?:[=!]=|[<>]=?)\s*)?(?:" + SEMVER + ")$")
TERM = re.compile(r"^[^/\\\s\x00-\x1f\x7f]{2,}$")          # no slash, backslash, space, control
TAG = re.compile(r"^[^/\\\x00-\x1f\x7f]{2,255}$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
    "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
    "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
    "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
    "restricted", "unrestricted", "unknown",
}
REQUIRED = ["name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"]
OPTIONAL = ["description", "generated_by", "tags", "no_index", "prereqs", "release_status", "resources"]
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}

def custom(key):                       # x_ and X_ keys are allowed anywhere
    return key[:2] in ("x_", "X_")

def nonempty_str(v):
    return isinstance(v, str) and v != ""

def check_version(where, v):
    if not isinstance(v, str) or not VERSION.match(v):
        bad(f"{where} must be a semantic version x.y.z (such as \"1.1.0\"), not {json.dumps(v)}")

def check_file(where, rel):
    if not isinstance(rel, str) or len(rel) < 2:
        bad(f"{where} must be a relative path, not {json.dumps(rel)}")
    elif rel.startswith("/") or "\\" in rel:
        bad(f"{where} must be a relative path with / separators, not {json.dumps(rel)}")
    elif not os.path.isfile(os.path.join(base, rel)):
        bad(f"{where}: {rel} does not exist in {base} (not added to the repository yet?)")

def control_version(ext):
    """default_version of ext.control, or None when there is no such file."""
    control = os.path.join(base, ext + ".control")
    if not os.path.isfile(control):
        return None, control
    with open(control, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*default_version\s*=\s*'?([^'#\s]*)'?", line)
            if m:
                return m.group(1), control
    return "", control

try:
    with open(path, encoding="utf-8") as f:
        meta = json.load(f)
except (OSError, ValueError) as e:
    print(f"{label}: not valid JSON: {e}", file=sys.stderr)
    sys.exit(1)

if not isinstance(meta, dict):
    print(f"{label}: the top level must be a JSON object", file=sys.stderr)
    sys.exit(1)

for key in REQUIRED:
    if key not in meta:
        bad(f"required key \"{key}\" is missing")
for key in meta:
    if key not in REQUIRED and key not in OPTIONAL and not custom(key):
        bad(f"unknown key \"{key}\" (custom keys start with x_)")

if "name" in meta and (not isinstance(meta["name"], str) or not TERM.match(meta["name"])):
    bad("name must be a string of 2 or more characters without /, \\, spaces or control characters")
for key in ("abstract", "description", "generated_by"):
    if key in meta and not nonempty_str(meta[key]):
        bad(f"{key} must be a non-empty string")
if "version" in meta:
    check_version("version", meta["version"])

m = meta.get("maintainer")
if "maintainer" in meta and not (nonempty_str(m) or
        (isinstance(m, list) and m and all(nonempty_str(x) for x in m))):
    bad("maintainer must be a non-empty string or a non-empty array of strings")

lic = meta.get("license")
if "license" in meta:
    if isinstance(lic, str) or isinstance(lic, list):
        names = [lic] if isinstance(lic, str) else lic
        if not names:
            bad("license must not be an empty array")
        for n in names:
            if n not in LICENSES:
                bad(f"license {json.dumps(n)} is not one of the spec's names: {', '.join(sorted(LICENSES))}")
    elif isinstance(lic, dict):
        if not lic or not all(nonempty_str(u) for u in lic.values()):
            bad("a license object must map license names to URLs")
    else:
        bad("license must be a string, an array of strings or an object")

ms = meta.get("meta-spec")
if "meta-spec" in meta:
    if not isinstance(ms, dict) or "version" not in ms:
        bad("meta-spec must be an object with a version")
    else:
        if not isinstance(ms["version"], str) or not re.match(r"^1\.0\.\d+$", ms["version"]):
            bad(f"meta-spec.version must be 1.0.x, not {json.dumps(ms['version'])}")
        if "url" in ms and ms["url"] not in ("https://pgxn.org/meta/spec.txt", "http://pgxn.org/meta/spec.txt"):
            bad(f"meta-spec.url must be https://pgxn.org/meta/spec.txt, not {json.dumps(ms['url'])}")
        for k in ms:
            if k not in ("version", "url") and not custom(k):
                bad(f"meta-spec: unknown key \"{k}\"")

prov = meta.get("provides")
if "provides" in meta:
    if not isinstance(prov, dict) or not prov:
        bad("provides must be an object naming at least one extension")
        prov = {}
    for ext, info in prov.items():
        where = f"provides.{ext}"
        if not TERM.match(ext):
            bad(f"{where}: an extension name must have 2 or more characters, without /, \\ or spaces")
        if not isinstance(info, dict):
            bad(f"{where} must be an object with file and version")
            continue
        for k in info:
            if k not in ("file", "version", "abstract", "docfile") and not custom(k):
                bad(f"{where}: unknown key \"{k}\"")
        if "file" not in info:
            bad(f"{where}.file is missing")
        else:
            check_file(f"{where}.file", info["file"])
        if "docfile" in info:
            check_file(f"{where}.docfile", info["docfile"])
        if "abstract" in info and not nonempty_str(info["abstract"]):
            bad(f"{where}.abstract must be a non-empty string")
        if "version" not in info:
            bad(f"{where}.version is missing")
            continue
        check_version(f"{where}.version", info["version"])
        cv, control = control_version(ext)
        if cv is None:
            bad(f"{where}: {os.path.basename(control)} not found, so its default_version cannot be compared")
            continue
        want = cv + ".0" if re.match(r"^\d+\.\d+$", cv) else cv
        if info["version"] != want:
            bad(f"{where}.version is {info['version']}, but {os.path.basename(control)} has "
                f"default_version = '{cv}' (that is {want}); the two must agree")

pre = meta.get("prereqs")
if "prereqs" in meta:
    if not isinstance(pre, dict) or not pre:
        bad("prereqs must be a non-empty object of phases")
        pre = {}
    for phase, rels in pre.items():
        if custom(phase):
            continue
        if phase not in PHASES:
            bad(f"prereqs: unknown phase \"{phase}\" (one of {', '.join(sorted(PHASES))})")
            continue
        if not isinstance(rels, dict):
            bad(f"prereqs.{phase} must be an object")
            continue
        for rel, reqs in rels.items():
            if custom(rel):
                continue
            if rel not in RELATIONS:
                bad(f"prereqs.{phase}: unknown relationship \"{rel}\"")
                continue
            if not isinstance(reqs, dict):
                bad(f"prereqs.{phase}.{rel} must be an object of names and version ranges")
                continue
            for name, rng in reqs.items():
                ok = rng == 0 or rng == "0" or (isinstance(rng, str) and
                     all(RANGE_PART.match(p.strip()) for p in rng.split(",")))
                if not ok:
                    bad(f"prereqs.{phase}.{rel}.{name}: {json.dumps(rng)} is not 0 or a version range such as \"15.0.0\"")

tags = meta.get("tags")
if "tags" in meta and not (isinstance(tags, list) and tags and
        all(isinstance(t, str) and TAG.match(t) for t in tags)):
    bad("tags must be a non-empty array of strings of 2 to 255 characters, without / or \\")

if "release_status" in meta and meta["release_status"] not in ("stable", "testing", "unstable"):
    bad("release_status must be stable, testing or unstable")

res = meta.get("resources")
if "resources" in meta:
    if not isinstance(res, dict) or not res:
        bad("resources must be a non-empty object")
    else:
        for k in res:
            if k not in ("homepage", "bugtracker", "repository") and not custom(k):
                bad(f"resources: unknown key \"{k}\"")

if "no_index" in meta and not isinstance(meta["no_index"], dict):
    bad("no_index must be an object")

# The Debian package is the same release: its newest changelog entry's
# upstream version (before the Debian revision) must be META.json's.
changelog = os.path.join(base, "debian", "changelog")
if os.path.isfile(changelog) and isinstance(meta.get("version"), str):
    with open(changelog, encoding="utf-8") as f:
        m = re.match(r"^\S+ \(([^)\s]+)\)", f.readline())
    upstream = m.group(1).split(":")[-1].rsplit("-", 1)[0] if m else None
    if upstream != meta["version"]:
        bad(f"version is {meta['version']}, but debian/changelog's newest entry is "
            f"{upstream or 'unreadable'}; the two must agree")

if problems:
    for p in problems:
        print(f"{label}: {p}", file=sys.stderr)
    print(f"{label}: {len(problems)} problem(s)", file=sys.stderr)
    sys.exit(1)
print(f"{label}: ok")
PY
