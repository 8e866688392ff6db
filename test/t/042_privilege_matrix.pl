# The privilege matrix, generated from the catalog.
#
# Role alice owns states of every keyed kind (value, list, map, reducing,
# aggregating) on every backend (memory, rocksdb, lmdb), logged and
# transactional ones, a timers state, a window state and operator states,
# holding values no other role may see.  Role bob, with no privileges,
# calls every function of the extension (pg_proc in schema state, and any
# function elsewhere that belongs to the extension) against each of them,
# with arguments derived from the argument types (a state name of alice's,
# a key, a value, a default of the state's types; a few functions take
# special arguments from %SPECIAL, but a function missing from it is still
# called).  Each call must end in 42501, or in a refusal listed in
# %HARMLESS, or succeed with no effect; every function that takes a state
# name must give 42501 on some state of alice's; no result or error of bob's
# holds alice's data; alice's states are unchanged (their contents before
# and after).  A trigger function (state.feed) is called the only way it
# can be: bob inserts into tables of his own whose triggers feed each of
# alice's states, as a statement trigger with a transition table and as an
# AFTER row trigger; each INSERT must end in 42501 (or a harmless refusal)
# and leave his table empty.  Internal functions (names starting with _) must not be
# executable by PUBLIC unless %INTERNAL_PUBLIC says why.
#
# The functions of a proxy's schema are in the matrix too: a proxy of one
# part (this server's own database, through PL/Proxy) is made first, and
# every function of its schema is called like the extension's.  Its public
# functions reach the part as bob and are refused there; its internal
# PL/Proxy functions (_value_get, _states, ...) stay executable by PUBLIC
# by design, since PL/Proxy connects to the parts as the caller, and stop
# at the cluster's gate (55000) when called outside a proxy call.
#
# The hooks, code alice chose, run as the role whose code asks for them, as
# PostgreSQL's executor runs any function a query calls:
# - in the caller's own session, a reducer's + operator and an aggregate's
#   transition and combine functions, run by state.reduce, state.aggregate
#   or a transactional state's commit, run as the caller (bob, who needs
#   write access to the state and EXECUTE on the functions; alice in hers);
# - in a process that is not the caller's session, the timer worker: a
#   timers handler, a window emit, the triggers of a window state's emit
#   table (its rows are inserted as the owner), and what a handler queues for its
#   transaction's commit (a transactional aggregate's combine function) run
#   as alice, the states' owner, never as bob or a superuser;
# - a window state's late function runs as alice in the session of whoever
#   adds a late value (bob), in a security-restricted operation;
# - state.alter_state is the owner's alone (42501 for bob even with read
#   and write granted, before his USING expression runs); a USING
#   expression runs as the caller, alice in her session, a superuser as
#   itself;
# - a deferred constraint trigger queued by a handler never runs as anyone:
#   the worker's transaction is a security-restricted operation, so its
#   commit refuses it (42501) and the timer fails, recorded in
#   state.timer_failures.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'privileges',
	lmdb => 1,
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints'\n"
	  . "state_backend.timer_retry_delay = '100ms'\n");
ok(defined wait_for_worker($node), 'state worker running');

# Every value of alice's is 4242000 + something, and every text 'SECRET':
# a result of bob's that holds one of them leaked her data.
my $MARK = qr/4242\d\d\d|SECRET/;

# Hooks record who they run as.
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE TABLE hook_log (hook text, current_role_name name, session_role_name name, is_superuser boolean,
                       ctx text);
GRANT INSERT, SELECT ON hook_log TO PUBLIC;
-- ctx: where the hook ran, "session NAME" (the client session of the test
-- that set application_name to NAME: alice or bob) or "worker" (another
-- process: the timer worker).
CREATE FUNCTION log_hook(what text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO hook_log SELECT what, current_user, session_user,
                              (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
                              CASE WHEN current_setting('application_name') IN ('alice', 'bob')
                                   THEN 'session ' || current_setting('application_name')
                                   ELSE 'worker' END $$;
GRANT EXECUTE ON FUNCTION log_hook(text) TO PUBLIC;
GRANT CREATE ON SCHEMA public TO alice, bob;
});

############################################################ alice's states

my @BACKENDS = qw(memory rocksdb lmdb);
# name => [ kind, create_state arguments after the kind ]
my %STATES;
for my $b (@BACKENDS)
{
	my $s = substr($b, 0, 1);
	$STATES{"v_$s"} = [ 'value', qq{'int', 'bigint', backend => '$b'} ];
	$STATES{"l_$s"} = [ 'list', qq{'int', 'bigint', backend => '$b'} ];
	$STATES{"m_$s"} = [ 'map', qq{'int', 'bigint', map_key_type => 'int', backend => '$b'} ];
	$STATES{"r_$s"} = [ 'reducing', qq{'int', 'bigint', reducer => 'sum', backend => '$b'} ];
	$STATES{"a_$s"} = [ 'aggregating', qq{'int', 'bigint', aggregate => 'agg_sum(bigint)', backend => '$b'} ];
	$STATES{"vlog_$s"} = [ 'value', qq{'int', 'bigint', backend => '$b', logged => true} ];
	$STATES{"vtx_$s"} = [ 'value', qq{'int', 'bigint', backend => '$b', transactional => true} ];
}
$STATES{atx} = [ 'aggregating', q{'int', 'bigint', aggregate => 'agg_sum(bigint)', transactional => true} ];
$STATES{rop} = [ 'reducing', q{'int', 'money2', reducer => 'sum'} ];
$STATES{tm} = [ 'timers', q{'int', handler => 'on_timer(int,timestamptz)', time_domain => 'event'} ];
$STATES{win} = [ 'window', q{'int', 'bigint', assigner => 'tumbling', size => '1 min', reducer => 'sum', emit => 'on_emit(int,timestamptz,timestamptz,bigint)', time_domain => 'event'} ];
$STATES{wtab} = [ 'window', q{'int', 'bigint', assigner => 'tumbling', size => '1 min', reducer => 'sum', emit_table => 'alice_windows', time_domain => 'event'} ];
$STATES{wlate} = [ 'window', q{'int', 'bigint', assigner => 'tumbling', size => '1 min', reducer => 'sum', emit => 'on_emit(int,timestamptz,timestamptz,bigint)', time_domain => 'event', out_of_orderness => '0', late => 'on_late(int,timestamptz,bigint)'} ];
$STATES{ol} = [ 'operator_list', q{value_type => 'bigint'} ];
$STATES{bc} = [ 'broadcast', q{value_type => 'bigint', map_key_type => 'int'} ];

$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TYPE money2 AS (v bigint);
CREATE FUNCTION money2_plus(a money2, b money2) RETURNS money2 LANGUAGE sql
  AS $$ SELECT log_hook('reducer operator'); SELECT ROW(a.v + b.v)::money2 $$;
CREATE OPERATOR + (FUNCTION = money2_plus, LEFTARG = money2, RIGHTARG = money2);
CREATE FUNCTION agg_sfunc(s bigint, v bigint) RETURNS bigint LANGUAGE sql
  AS $$ SELECT log_hook('aggregate transition'); SELECT coalesce(s, 0) + v $$;
CREATE FUNCTION agg_combine(a bigint, b bigint) RETURNS bigint LANGUAGE sql
  AS $$ SELECT log_hook('aggregate combine'); SELECT coalesce(a, 0) + coalesce(b, 0) $$;
CREATE AGGREGATE agg_sum(bigint) (SFUNC = agg_sfunc, STYPE = bigint, COMBINEFUNC = agg_combine);
CREATE TABLE deferred_target (k int);
CREATE FUNCTION deferred_fn() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN PERFORM log_hook('deferred trigger'); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER deferred_tg AFTER INSERT ON deferred_target
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION deferred_fn();
CREATE FUNCTION on_timer(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM log_hook('timer handler');
  -- Work queued for the commit of the timer worker's transaction.
  IF k = 98 THEN
    INSERT INTO deferred_target VALUES (k);
  ELSIF k = 99 THEN
    PERFORM state.aggregate('atx', k, 1::bigint);
  END IF;
END $$;
CREATE FUNCTION on_emit(k int, ws timestamptz, we timestamptz, r bigint) RETURNS void
  LANGUAGE sql AS $$ SELECT log_hook('window emit') $$;
CREATE TABLE alice_windows (k int, ws timestamptz, we timestamptz, r bigint);
CREATE FUNCTION alice_windows_after() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN PERFORM log_hook('emit table trigger'); RETURN NULL; END $$;
CREATE TRIGGER alice_windows_after AFTER INSERT ON alice_windows
  FOR EACH ROW EXECUTE FUNCTION alice_windows_after();
CREATE FUNCTION on_late(k int, t timestamptz, v bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM log_hook('late function');
  -- Work queued for the commit of the caller's transaction.
  IF k = 97 THEN
    INSERT INTO deferred_target VALUES (k);
  END IF;
END $$;
} . join('', map {
	my ($kind, $args) = @{ $STATES{$_} };
	"SELECT state.create_state('$_', '$kind', $args);\n"
} sort keys %STATES) . q{
RESET ROLE;
});

# Her data: keys 1 and 2 of every keyed state.
my %FILL = (
	value => q{SELECT state.value_set('%s', k, 4242000 + k) FROM generate_series(1, 2) k},
	list => q{SELECT state.list_add('%s', k, 4242100 + k) FROM generate_series(1, 2) k},
	map => q{SELECT state.map_put('%s', k, k, 4242200 + k) FROM generate_series(1, 2) k},
	reducing => q{SELECT state.reduce('%s', k, 4242300 + k) FROM generate_series(1, 2) k},
	aggregating => q{SELECT state.aggregate('%s', k, 4242400 + k) FROM generate_series(1, 2) k},
	timers => q{SELECT state.timer_register('%s', k, '2030-01-01'::timestamptz + k * interval '1 s') FROM generate_series(1, 2) k},
	window => q{SELECT state.window_add('%s', k, '2030-01-01'::timestamptz, 4242500 + k) FROM generate_series(1, 2) k},
	operator_list => q{SELECT state.operator_add('%s', 4242600::bigint)},
	broadcast => q{SELECT state.broadcast_put('%s', 1, 4242700::bigint)},
);
$node->safe_psql('postgres', "SET ROLE alice;\n"
	  . join(";\n", map { sprintf($FILL{ $STATES{$_}[0] }, $_) } grep { $_ ne 'rop' } sort keys %STATES)
	  . ";\nSELECT state.reduce('rop', 1, ROW(4242800)::money2);\n");

# The contents of alice's states, read as alice.
my %READ = (
	value => q{SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM state.entries('%s', NULL::int, NULL::bigint) e(k, v)},
	reducing => q{SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM state.entries('%s', NULL::int, NULL::text) e(k, v)},
	aggregating => q{SELECT string_agg(k || '=' || state.value_get('%1$s', k, NULL::bigint), ',' ORDER BY k) FROM state.keys('%1$s', NULL::int) k},
	list => q{SELECT string_agg(k || '=' || state.list_get('%1$s', k, NULL::bigint[])::text, ',' ORDER BY k) FROM state.keys('%1$s', NULL::int) k},
	map => q{SELECT string_agg(k || ':' || m.map_key || '=' || m.value, ',' ORDER BY k, m.map_key) FROM state.keys('%1$s', NULL::int) k, state.map_entries('%1$s', k, NULL::int, NULL::bigint) m},
	timers => q{SELECT string_agg(key || '@' || at, ',' ORDER BY key, at) FROM state.timers('%s', NULL::int)},
	window => q{SELECT string_agg(key || '@' || window_start || '=' || state.window_get('%1$s', key, window_start, NULL::bigint), ',' ORDER BY key, window_start) FROM state.windows('%1$s', NULL::int)},
	operator_list => q{SELECT state.operator_get('%s', NULL::bigint[])::text},
	broadcast => q{SELECT string_agg(map_key || '=' || value, ',' ORDER BY map_key) FROM state.broadcast_entries('%s', NULL::int, NULL::bigint)},
);
sub contents
{
	my $sql = "SET ROLE alice;\n" . join(" UNION ALL\n", map {
		my $name = $_;
		"SELECT '$name', (" . sprintf($READ{ $STATES{$name}[0] }, $name) . ")"
	} sort keys %STATES) . ";\nSELECT name, owner, entries FROM state.states ORDER BY name;";
	return $node->safe_psql('postgres', $sql);
}
my $before = contents();
like($before, qr/v_l\|1=4242001,2=4242002/, 'alice\'s states hold her data');

############################################################ a proxy

# A proxy of one part, this server's database "postgres": its schema's
# functions join the matrix.
my $with_proxy = -e '/usr/lib/postgresql/15/lib/plproxy.so';
if ($with_proxy)
{
	$node->safe_psql('postgres', 'CREATE EXTENSION plproxy;'
		  . "SELECT state.create_proxy('pm', ARRAY['host=" . $node->host . ' port=' . $node->port
		  . " dbname=postgres'], 'pm_proxy')");
}
else
{
	diag('PL/Proxy (postgresql-15-plproxy) is not installed: no proxy functions in the matrix');
}

############################################################ the functions

# Every function of the extension: in schema state, in a proxy's schema,
# or elsewhere but belonging to it.
my @funcs = split /\n/, $node->safe_psql('postgres', q{
SELECT p.oid || '|' || n.nspname || '|' || p.proname || '|' || coalesce(array_to_string(p.proargtypes::regtype[], ','), '')
       || '|' || p.proretset || '|' || coalesce(array_to_string(p.proargnames, ','), '')
       || '|' || p.prorettype::regtype
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'state'
    OR n.nspname IN (SELECT schema FROM state.proxies)
    OR p.oid IN (SELECT objid FROM pg_depend
                  WHERE classid = 'pg_proc'::regclass AND deptype = 'e'
                    AND refclassid = 'pg_extension'::regclass
                    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'state_backend'))
 ORDER BY 1});
ok(@funcs > 50, scalar(@funcs) . ' functions of the extension in the catalog');
my %proxy_fn = map { (split /\|/)[0] => 1 } grep { (split /\|/)[1] eq 'pm_proxy' } @funcs;
ok(!$with_proxy || grep({ my ($o, $n, $p) = split /\|/; $n eq 'pm_proxy' && $p =~ /^(states|stats)$/ } @funcs) == 2,
	scalar(keys %proxy_fn) . ' functions of the proxy schema in the matrix, states() and stats() among them');
# The internal PL/Proxy functions whose CLUSTER is the gate.
my %gated = map { $_ => 1 } split /\n/, $node->safe_psql('postgres', q{
SELECT p.oid FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE l.lanname = 'plproxy' AND p.prosrc ~ '^\s*CLUSTER [^;]*\._gate\(\);'});

# Internal functions executable by PUBLIC, and why that is right.
my %INTERNAL_PUBLIC = (
	'state._states' => 'backs the view state.states, which every role may read; it lists only what the caller may see',
	'state._stats' => 'backs the view state.stats, likewise',
	'state._worker' => 'backs the view state.worker (figures of the server, no state data)',
	'state._snapshots' => 'backs the view state.snapshots (paths and figures, no state data)',
	'state._timer_status' => 'backs the view state.timer_status, which filters by the caller',
	'state._proxy_functions' => 'a constant list of function names; reads nothing',
	'state._proxy_options' => 'checks its own arguments and returns them as SQL/MED options, reading nothing else; '
	  . 'create_proxy, alter_proxy and rescale_proxy, once granted to a role, call it with that role\'s rights',
	'pm_proxy._gate' => 'the CLUSTER of every PL/Proxy function of the proxy, run by every caller of the proxy '
	  . '(SECURITY DEFINER): it returns the cluster\'s name only in a session that holds the gate (a proxy call runs), '
	  . 'else 55000; state._proxy_gate behind it is not PUBLIC\'s',
);
my $gated_why = 'a PL/Proxy function of the proxy: PUBLIC\'s by design, since PL/Proxy connects to the parts as '
  . 'the caller; its CLUSTER is the gate, so outside a proxy call it stops there (55000)';
for my $f (@funcs)
{
	my ($oid, $nsp, $name, $args) = split /\|/, $f;
	next unless $name =~ /^_/;
	my $public = $node->safe_psql('postgres',
		"SELECT has_function_privilege('public', $oid, 'EXECUTE')");
	my $why = $INTERNAL_PUBLIC{"$nsp.$name"} // ($gated{$oid} ? $gated_why : undef);
	ok($public eq 'f' || defined $why,
		"internal function $nsp.$name($args): not executable by PUBLIC"
		  . ($public eq 't' && $why ? ", allowed: $why" : ''));
}

# Refusals other than 42501 that change nothing and show nothing, and why
# they are fine: the call's arguments (derived from types) do not fit the
# state it names, so it stops before any data is touched.
my %HARMLESS = (
	'42809' => 'wrong_object_type: a function of another kind than the state',
	'42804' => 'datatype_mismatch: an argument of another type than the state\'s',
	'22023' => 'invalid_parameter_value: an argument the function refuses',
	'0A000' => 'feature_not_supported: a call the state\'s kind or backend does not take',
	'42710' => 'duplicate_object: create_state with the name of an existing state',
	'42704' => 'undefined_object: a snapshot, role or state that does not exist',
	'42883' => 'undefined_function: a type without the operator the call needs',
	'55000' => 'object_not_in_prerequisite_state: plproxy is not installed in a database, or a proxy\'s '
	  . 'internal function called outside a proxy call (its gate)',
	'22008' => 'datetime_field_overflow: a time the call refuses',
	'22004' => 'null_value_not_allowed: a NULL argument',
);

# Special arguments: function name => { argument position (0-based) => SQL }.
my %SPECIAL = (
	create_state => { 1 => q{'value'::text}, 2 => q{'int'::regtype}, 3 => q{'bigint'::regtype} },
	grant_access => { 1 => q{'bob'::regrole}, 2 => q{'write'::text} },
	revoke_access => { 1 => q{'alice'::regrole}, 2 => q{'read'::text} },
	snapshot => { 0 => qq{'$dir/by_bob'::text}, 1 => q{'native'::text} },
	key_group_range => { 0 => '2', 1 => '0' },
	part_for => { 2 => '2' },
	wait_snapshot => { 0 => '1::bigint', 1 => q{'1 s'::interval} },
);

# An argument of type $type at position $i of function $name, called on
# state $state: SQL.
sub argument
{
	my ($name, $i, $type, $state, $argname) = @_;
	return $SPECIAL{$name}{$i} if exists $SPECIAL{$name}{$i};
	$argname //= '';
	return qq{'$state'::text} if $i == 0 && $type eq 'text';
	return qq{'$state'::text} if $type eq 'text' && $argname =~ /^(name|cluster)$/;
	return 'ARRAY[' . join(',', map { qq{'$dir/snap$_'} } 1, 2) . ']::text[]' if $type eq 'text[]' && $name eq 'restore';
	return qq{'$dir/snap1'::text} if $type eq 'text' && $name =~ /^(restore|snapshot_states|snapshot_entries)$/ && $i == 0;
	my %by_type = (
		'text' => q{'1'::text},
		'anycompatible' => '1::int',
		'anyelement' => ($name =~ /get|entries|keys|timers|windows/ ? 'NULL::bigint' : '7::bigint'),
		'anyarray' => ($name =~ /get/ ? 'NULL::bigint[]' : 'ARRAY[7]::bigint[]'),
		'"any"' => '1::int',
		'timestamp with time zone' => q{'2030-01-01 00:00:00+00'::timestamptz},
		'interval' => q{'1 s'::interval},
		'bigint' => '1::bigint',
		'integer' => '1',
		'boolean' => 'true',
		'regrole' => q{'bob'::regrole},
		'regtype' => q{'int'::regtype},
		'regprocedure' => 'NULL::regprocedure',
		'name' => q{'bob_schema'::name},
		'anycompatiblearray' => 'ARRAY[1]::int[]',
		'text[]' => q{ARRAY['1']::text[]},
	);
	return $by_type{$type} // "NULL::$type";
}

# The calls: bob's, each with the function it tests.
my @calls;
my %takes_state;

# Bob's tables, fed to each of alice's states by a trigger of each feed
# function: columns key, time, map key and value, named as the trigger's
# arguments for the state's kind.
my %FEED_COLUMNS = (
	map => q{'k', 'mk', 'v'},
	timers => q{'k', 't'},
	window => q{'k', 't', 'v'},
);
my @feed_tables;
sub feed_calls
{
	my ($oid, $fn, $nsp, $name) = @_;
	my @sql;
	for my $state (sort keys %STATES)
	{
		my $columns = $FEED_COLUMNS{ $STATES{$state}[0] } // q{'k', 'v'};
		for my $form ('stmt', 'row')
		{
			my $table = "bob_${name}_${form}_$state";
			my $when = $form eq 'stmt'
			  ? 'AFTER INSERT ON %s REFERENCING NEW TABLE AS n FOR EACH STATEMENT'
			  : 'AFTER INSERT ON %s FOR EACH ROW';
			push @sql, "CREATE TABLE $table (k int, t timestamptz, mk int, v bigint);\n"
			  . "CREATE TRIGGER feed " . sprintf($when, $table)
			  . " EXECUTE FUNCTION $nsp.$name('$state', $columns);\n";
			push @feed_tables, $table;
			push @calls, [ $oid, $fn, $state,
				"WITH i AS (INSERT INTO $table VALUES (1, '2030-01-01', 1, 7) RETURNING 1) "
				  . "SELECT count(*)::text FROM i" ];
		}
	}
	$node->safe_psql('postgres', "SET ROLE bob;\n" . join('', @sql));
}

for my $f (@funcs)
{
	my ($oid, $nsp, $name, $args, $retset, $argnames, $rettype) = split /\|/, $f;
	if ($rettype eq 'trigger')
	{
		$takes_state{$oid} = 1;
		feed_calls($oid, "$nsp.$name($args)", $nsp, $name);
		next;
	}
	my @types = $args eq '' ? () : split /,/, $args;
	my @names = split /,/, ($argnames // '');
	my $state_arg = @types && $types[0] eq 'text' && $name ne 'snapshot' && $name !~ /^(restore|snapshot_states|_proxy_options)$/;
	$takes_state{$oid} = 1 if $state_arg && $name !~ /proxy/ && !$gated{$oid};
	for my $state ($state_arg ? sort keys %STATES : ('v_m'))
	{
		my @a = map { argument($name, $_, $types[$_], $state, $names[$_]) } 0 .. $#types;
		push @calls, [ $oid, "$nsp.$name($args)", $state,
			"SELECT string_agg(t::text, ';') FROM (SELECT * FROM $nsp.$name(" . join(', ', @a) . ")) t" ];
	}
}

# Bob's calls, each in a subtransaction, from one session.
$node->safe_psql('postgres', q{
CREATE TABLE calls (id int PRIMARY KEY, sql text);
GRANT SELECT ON calls TO bob;
CREATE FUNCTION try_call(sql text, OUT code text, OUT result text) LANGUAGE plpgsql AS $$
DECLARE
  detail text;
BEGIN
  EXECUTE sql INTO result;
  code := '00000';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, result = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
  result := result || ' ' || coalesce(detail, '');
END $$;
});
my $i = 0;
$node->safe_psql('postgres', 'INSERT INTO calls VALUES '
	  . join(",\n", map { $i++; "($i, \$q\$$_->[3]\$q\$)" } @calls));
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE bob; SELECT c.id || '|' || r.code || '|' || replace(coalesce(r.result, ''), E'\n', ' ')
	    FROM calls c, LATERAL try_call(c.sql) r ORDER BY c.id},
	timeout => 600);
is($ret, 0, "bob's " . scalar(@calls) . ' calls ran') or diag($err);

my (%got_42501, @bad_state, @leaks, %succeeded, %gate_passed);
for my $line (split /\n/, $out)
{
	my ($id, $sqlstate, $result) = split /\|/, $line, 3;
	my ($oid, $fn, $state, $sql) = @{ $calls[ $id - 1 ] };
	push @leaks, "$fn on $state: $result" if ($result // '') =~ $MARK;
	$gate_passed{$fn} = "$sqlstate $result" if $gated{$oid} && $sqlstate !~ /^(55000|42501)$/;
	if ($sqlstate eq '42501')
	{
		$got_42501{$oid} = 1;
	}
	elsif ($sqlstate eq '00000')
	{
		$succeeded{$fn}++;
	}
	elsif (!exists $HARMLESS{$sqlstate})
	{
		push @bad_state, "$fn on $state: $sqlstate $result";
	}
}
is(join("\n", @leaks), '', "no result or error of bob's holds alice's data");
is(join("\n", map { "$_: $gate_passed{$_}" } sort keys %gate_passed), '',
	scalar(keys %gated) . ' internal PL/Proxy functions of the proxy, called alone, stop at its gate (55000) or are not PUBLIC\'s (42501)');
is(join("\n", @bad_state), '', 'every call of bob\'s ends in 42501, a harmless refusal or no effect');
# Functions whose name argument is not a state of alice's to refuse.
my %NO_42501 = (
	create_state => 'names a new state of the caller\'s; an existing name is 42710, and nothing changes',
);
my @never = map { (split /\|/)[1] . '.' . (split /\|/)[2] . '(' . (split /\|/)[3] . ')' }
  grep { my ($oid, $n, $name) = split /\|/; $takes_state{$oid} && !$got_42501{$oid} && !$NO_42501{$name} } @funcs;
is(join("\n", @never), '', 'every function that takes a state name refuses bob with 42501 on a state of alice\'s');
note('calls that succeeded (with no effect, checked below): '
	  . join(', ', map { "$_ x$succeeded{$_}" } sort keys %succeeded));
is(contents(), $before, 'alice\'s states are unchanged after bob\'s calls');
ok(@feed_tables > 0, scalar(@feed_tables) . ' tables of bob\'s feed alice\'s states through triggers');
is($node->safe_psql('postgres', 'SELECT ' . join(' + ', map { "(SELECT count(*) FROM $_)" } @feed_tables)),
	'0', 'bob\'s inserts into tables that feed alice\'s states inserted nothing');

############################################################ hooks

# Bob is granted read and write access to the reducing and aggregating
# states, and EXECUTE on their functions (PUBLIC's already), so that the
# folds run in his session; alice folds into a transactional aggregating
# state in hers; then her timers and windows fire in the timer worker.
$node->safe_psql('postgres', q{
SET ROLE alice;
SELECT state.grant_access('rop', 'bob', 'read'), state.grant_access('rop', 'bob', 'write');
SELECT state.grant_access('a_m', 'bob', 'read'), state.grant_access('a_m', 'bob', 'write');
RESET ROLE;
TRUNCATE hook_log;
});
$node->safe_psql('postgres', q{
SET application_name = 'bob';
SET ROLE bob;
SELECT state.reduce('rop', 1, ROW(1)::money2);
SELECT state.aggregate('a_m', 1, 1::bigint);
});
# A value of bob's that is late reaches alice's late function, in bob's
# session and transaction, as alice; one whose late function queues a
# deferred trigger fails (42501 at the end of the function's statement),
# and the trigger never runs.
$node->safe_psql('postgres', q{
SET ROLE alice;
SELECT state.grant_access('wlate', 'bob', 'read'), state.grant_access('wlate', 'bob', 'write');
});
$node->safe_psql('postgres', q{
SET application_name = 'bob';
SET ROLE bob;
SELECT state.window_add('wlate', 5, '2029-01-01'::timestamptz, 1::bigint);
});
my ($late_ret, $late_out, $late_err) = $node->psql('postgres', q{
SET application_name = 'bob';
SET ROLE bob;
SELECT state.window_add('wlate', 97, '2029-01-01'::timestamptz, 1::bigint);
}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($late_err, qr/42501.*cannot fire deferred trigger within security-restricted operation/,
	'a deferred trigger queued by a late function is refused in the caller\'s transaction');
$node->safe_psql('postgres', q{
SET application_name = 'alice';
SET ROLE alice;
BEGIN;
SELECT state.aggregate('atx', 1, 1::bigint);
SELECT state.aggregate('atx', 99, 1::bigint);
COMMIT;
SELECT state.timer_register('tm', k, '2029-01-01'::timestamptz) FROM unnest(ARRAY[98, 99]) k;
SELECT state.advance_watermark('tm', '2031-01-01'::timestamptz);
SELECT state.advance_watermark('win', '2031-01-01'::timestamptz);
SELECT state.advance_watermark('wtab', '2031-01-01'::timestamptz);
});
# Where each hook must have run (at least once).
my @required = (
	'reducer operator|session bob',
	'aggregate transition|session bob',
	'aggregate transition|session alice',
	'aggregate combine|session alice',
	'timer handler|worker',
	'aggregate transition|worker',
	'aggregate combine|worker',
	'window emit|worker',
	'emit table trigger|worker',
	'late function|session bob',
);
# The combine at the commit of the timer worker's transaction: after the
# handler of key 99 ran, the atx state holds its fold, combined with the
# value alice committed before.
ok($node->poll_query_until('postgres',
		q{SELECT state.value_get('atx', 99, 0::bigint) = 2}),
	'the aggregate the timer handler queued was combined at the worker\'s commit');
ok($node->poll_query_until('postgres',
		'SELECT count(DISTINCT hook || \'|\' || ctx) >= ' . scalar(@required) . ' FROM hook_log'),
	'every hook ran');
my %ran = map { $_ => 1 } split /\n/, $node->safe_psql('postgres',
	q{SELECT DISTINCT hook || '|' || ctx FROM hook_log});
is(join(', ', grep { !$ran{$_} } @required), '', 'every hook ran where expected (hook|where)')
  or diag('ran: ' . join(', ', sort keys %ran));
# The rule: in a client session, as that session's role (bob's session:
# bob; alice's: alice), but for a late function, which runs as the owner
# alice in any session; in the worker, as alice, never as a superuser.
is( $node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT hook || ' in ' || ctx || ' ran as ' || current_role_name
                  || CASE WHEN is_superuser THEN ' (superuser)' ELSE '' END, E'\n')
  FROM hook_log
 WHERE is_superuser
    OR current_role_name <> CASE WHEN ctx = 'worker' OR hook = 'late function' THEN 'alice'
                                 ELSE substr(ctx, 9) END}),
	'', 'hooks in a caller\'s session run as the caller, a late function and the timer worker\'s as the owner alice');
# The deferred trigger the handler of key 98 queued: never run, its timer
# failed with 42501 at the worker's commit.
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM state.timer_failures
 WHERE name = 'tm' AND key = '98'
   AND error LIKE '%cannot fire deferred trigger within security-restricted operation%'}),
	'a deferred trigger queued by a handler is refused at the worker\'s commit; the timer fails')
  or diag($node->safe_psql('postgres', 'SELECT * FROM state.timer_failures'));
is($node->safe_psql('postgres', q{SELECT count(*) FROM hook_log WHERE hook = 'deferred trigger'}),
	'0', 'the deferred trigger never ran, as anyone');
my @hooks = ('reducer operator', 'aggregate transition', 'aggregate combine', 'timer handler',
	'window emit', 'emit table trigger', 'late function', 'deferred trigger');

############################################################ alter_state

# state.alter_state is the owner's (or a superuser's) alone: bob, granted
# read and write on a state of alice's, is refused (42501) whatever he asks,
# a change of nothing too, before any USING expression of his runs; the
# state is unchanged.  A USING expression runs as the caller: alice's as
# alice in her session, a superuser's as the superuser.
$node->safe_psql('postgres', q{
CREATE FUNCTION alter_using_hook(v bigint) RETURNS bigint LANGUAGE sql
  AS $$ SELECT log_hook('alter using'); SELECT v $$;
GRANT EXECUTE ON FUNCTION alter_using_hook(bigint) TO PUBLIC;
SET ROLE alice;
SELECT state.create_state('alt_g', 'value', 'int', 'bigint');
SELECT state.value_set('alt_g', 1, 4242901::bigint);
SELECT state.grant_access('alt_g', 'bob', 'read'), state.grant_access('alt_g', 'bob', 'write');
RESET ROLE;
TRUNCATE hook_log;
});
my $alt_g = q{SELECT name || ' ' || value_type || ' ' || backend || ' ' || logged || ' ' || coalesce(ttl::text, '-')
                     || ' v' || version || ' ' || state.value_get('alt_g', 1, 0::bigint)
                FROM state.states WHERE name = 'alt_g'};
my $alt_g_before = $node->safe_psql('postgres', $alt_g);
for my $args (q{}, q{, value_type => 'numeric'}, q{, rename_to => 'bobs'},
	q{, value_type => 'bigint', value_using => 'alter_using_hook(value)'},
	q{, key_type => 'bigint', key_using => 'key'}, q{, backend => 'rocksdb'}, q{, logged => true},
	q{, transactional => true}, q{, ttl => '1 hour'})
{
	my $e = sql_error($node, "SET application_name = 'bob'; SET ROLE bob; SELECT state.alter_state('alt_g'$args)");
	is($e->{sqlstate}, '42501', "alter_state('alt_g'$args) by bob, who may read and write it: 42501")
	  or diag($e->{stderr});
	unlike($e->{stderr}, $MARK, "alter_state('alt_g'$args) by bob: the error shows none of alice's data");
}
is($node->safe_psql('postgres', $alt_g), $alt_g_before, 'alice\'s state is unchanged after bob\'s alter_state calls');
is($node->safe_psql('postgres', q{SELECT count(*) FROM hook_log WHERE hook = 'alter using'}),
	'0', 'no USING expression of bob\'s ran');
$node->safe_psql('postgres', q{SET ROLE bob; SELECT state.value_set('alt_g', 2, 1::bigint)});
$node->safe_psql('postgres', q{
SET application_name = 'alice';
SET ROLE alice;
SELECT state.alter_state('alt_g', value_type => 'bigint', value_using => 'alter_using_hook(value) + 1');
});
is( $node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT ctx || ' as ' || current_role_name || CASE WHEN is_superuser THEN ' (superuser)' ELSE '' END, ', ')
  FROM hook_log WHERE hook = 'alter using'}),
	'session alice as alice', 'alice\'s USING expression ran in her session, as alice');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM hook_log WHERE hook = 'alter using'}),
	'>=', 2, 'for each entry');
$node->safe_psql('postgres', q{
TRUNCATE hook_log;
SELECT state.alter_state('alt_g', value_type => 'bigint', value_using => 'alter_using_hook(value) + 1');
});
is( $node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT CASE WHEN is_superuser AND current_role_name = session_role_name THEN 'the superuser'
                                ELSE current_role_name END, ', ')
  FROM hook_log WHERE hook = 'alter using'}),
	'the superuser', 'a superuser\'s USING expression ran as the superuser');
is($node->safe_psql('postgres', q{SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM state.entries('alt_g', NULL::int, NULL::bigint) e(k, v)}),
	'1=4242903,2=3', 'both changes converted every entry');
my $alt_n = $node->safe_psql('postgres', q{SELECT version FROM state.states WHERE name = 'alt_g'});
is($alt_n, '3', 'two changes counted');

diag(sprintf('privilege matrix: %d functions (%d of a proxy schema), %d calls, %d states of alice\'s, '
	  . '%d hooks in %d places, as 2 roles (bob against alice)',
	scalar(@funcs), scalar(keys %proxy_fn), scalar(@calls), scalar(keys %STATES), scalar(@hooks),
	scalar(@required) + 1));
$node->stop;
done_testing();
