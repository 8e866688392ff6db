# The documentation as written: README.md's Quickstart runs and returns what
# it says, and every relative link of README.md and docs/*.md leads somewhere.
#
# 1. The ```sql blocks under README.md's "Quickstart" heading (up to the next
#    heading of the same or a higher level) are run, joined in order and
#    exactly as written, by one psql (-X -A -t -q -v ON_ERROR_STOP=1) on a
#    fresh server that preloads the library but has no extension yet: once
#    without state_backend.checkpoint_dir (snapshots kept in shared memory)
#    and once with it (as scripts/demo.sh's server has).  psql must exit 0.
#
#    The convention for expected results: a "-- " comment at the end of the
#    line on which a statement ends (after its ";") states that statement's
#    output, as psql prints it with -A -t: one line; the columns of a row
#    separated by "|"; spaces at either end, and around each "|", are
#    ignored.  Such a comment is compared, nothing else: a comment on a line
#    of its own, or at the end of a line inside a statement, is prose.  So a
#    statement whose result has several rows, or changes from run to run,
#    has no comment at its end.  The output of each statement is taken from
#    psql's log file (-L), which records each query sent and what came back
#    (in psql's aligned form, which reads as the -A -t form once the spaces
#    above are ignored); the queries it records must be the block's
#    statements, in order (psql variables such as :snap stand for any value).
#
# 2. Every relative link of README.md and docs/*.md ([text](target),
#    ![alt](target), and [label]: target definitions; not in code) must name
#    a file or directory that exists, relative to the file that holds the
#    link, and a "#anchor" must be the slug of a heading of its target file
#    (or of the same file), made as GitHub makes it: the heading's text
#    (links reduced to their text, code spans to their content) in lower
#    case, every character that is not a letter, a digit, "_", "-" or a
#    space removed, each space made a "-"; a repeated slug gets "-1", "-2",
#    ... in order.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Spec;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $root = abs_path("$FindBin::RealBin/../..");
my $readme = "$root/README.md";

sub read_lines
{
	my ($file) = @_;
	open my $fh, '<:encoding(UTF-8)', $file or die "open $file: $!";
	my @lines = <$fh>;
	close $fh;
	chomp @lines;
	return @lines;
}

########################################################### Markdown structure

# Headings of a Markdown file, outside fenced code: a list of
# { level, text, line }.
# The indexes of the lines of a Markdown file outside fenced code.
sub prose_lines
{
	my @lines = @_;
	my (@prose, $fence);
	for my $i (0 .. $#lines)
	{
		if (defined $fence)
		{
			undef $fence if $lines[$i] =~ /^\s{0,3}\Q$fence\E\s*$/;
		}
		elsif ($lines[$i] =~ /^\s{0,3}(```+|~~~+)/)
		{
			$fence = $1;
		}
		else
		{
			push @prose, $i;
		}
	}
	return @prose;
}

sub headings
{
	my @lines = @_;
	my @h;
	for my $i (prose_lines(@lines))
	{
		my $l = $lines[$i];
		if ($l =~ /^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/)
		{
			push @h, { level => length($1), text => $2, line => $i };
		}
		elsif ($i > 0
			&& $l =~ /^\s{0,3}(=+|-+)\s*$/
			&& $lines[ $i - 1 ] =~ /\S/
			&& $lines[ $i - 1 ] !~ /^\s{0,3}(?:[-*+>|#]|```|~~~|\d+[.)])/)
		{
			# a setext heading: the line before, underlined
			push @h,
			  {
				level => (substr($1, 0, 1) eq '=' ? 1 : 2),
				text => $lines[ $i - 1 ],
				line => $i - 1
			  };
		}
	}
	return @h;
}

# GitHub's anchor for a heading's text.
sub slug
{
	my ($t) = @_;
	$t =~ s/!?\[([^\]]*)\]\([^)]*\)/$1/g;    # links and images: their text
	$t =~ s/`+([^`]*)`+/$1/g;                # code spans: their content
	$t =~ s/<[^>]*>//g;                      # inline HTML tags
	$t = lc $t;
	$t =~ s/[^\p{L}\p{M}\p{N}_\- ]//g;
	$t =~ s/ /-/g;
	return $t;
}

# The set of anchors a Markdown file's headings give.
sub anchors
{
	my @lines = @_;
	my (%seen, %anchors);
	for my $h (headings(@lines))
	{
		my $s = slug($h->{text});
		my $a = $s;
		$a = "$s-$seen{$s}" if $seen{$s};
		$seen{$s}++;
		$anchors{$a} = 1;
	}
	return \%anchors;
}

################################################################ Quickstart

# The ```sql blocks under README.md's Quickstart heading, with the line
# number (1-based) each block's first line has.
sub quickstart_blocks
{
	my @lines = read_lines($readme);
	my @h = headings(@lines);
	my ($qs) = grep { $_->{text} =~ /^Quickstart$/i } @h;
	return () unless $qs;
	my ($next) = grep { $_->{line} > $qs->{line} && $_->{level} <= $qs->{level} } @h;
	my $end = $next ? $next->{line} - 1 : $#lines;
	my (@blocks, $cur, $fence);
	for my $i ($qs->{line} + 1 .. $end)
	{
		my $l = $lines[$i];
		if (defined $fence)
		{
			if ($l =~ /^\s{0,3}\Q$fence\E\s*$/)
			{
				push @blocks, $cur if defined $cur;
				undef $fence;
				undef $cur;
			}
			elsif (defined $cur)
			{
				push @{ $cur->{lines} }, $l;
			}
			next;
		}
		if ($l =~ /^\s{0,3}(```+|~~~+)\s*(\S*)/)
		{
			$fence = $1;
			$cur = { first => $i + 2, lines => [] } if lc($2) eq 'sql';
		}
	}
	return @blocks;
}

# Splits SQL text, as psql reads it, into the statements it sends.  Returns
# a list of { text (the statement with its comments removed, as one line),
# line (where it ends), expected (its trailing comment, or undef) }.
# Knows '...', E'...', "...", $tag$...$tag$, -- comments, /* */ comments,
# ";" and a backslash command that ends a statement (\g, \gset, ...).  A
# backslash command on a line of its own is psql's, not a statement.
sub split_sql
{
	my ($first_line, @lines) = @_;
	my (@stmts, $buf, $quote, $estring, $dollar, $block_comment);
	$buf = '';
	for my $n (0 .. $#lines)
	{
		my $l = $lines[$n];
		my $ended_here;    # index in @stmts of a statement ended on this line
		my $rest_start;    # where the text after that statement begins
		my $i = 0;
		my $len = length $l;
		while ($i < $len)
		{
			my $c = substr($l, $i, 1);
			if ($block_comment)
			{
				if (substr($l, $i, 2) eq '*/') { $block_comment = 0; $i += 2; next; }
				$i++;
				next;
			}
			if (defined $dollar)
			{
				if (substr($l, $i, length $dollar) eq $dollar)
				{
					$buf .= $dollar;
					$i += length $dollar;
					undef $dollar;
					next;
				}
				$buf .= $c;
				$i++;
				next;
			}
			if (defined $quote)
			{
				$buf .= $c;
				if ($c eq $quote)
				{
					# a doubled quote stays inside
					if (substr($l, $i + 1, 1) eq $quote) { $buf .= $quote; $i += 2; next; }
					undef $quote;
				}
				elsif ($c eq '\\' && $estring)
				{
					$buf .= substr($l, $i + 1, 1);
					$i += 2;
					next;
				}
				$i++;
				next;
			}
			if (substr($l, $i, 2) eq '--')
			{
				my $comment = substr($l, $i + 2);
				if (defined $ended_here && substr($l, $rest_start, $i - $rest_start) =~ /^\s*$/)
				{
					$comment =~ s/^\s+|\s+$//g;
					$stmts[$ended_here]{expected} = $comment;
				}
				last;
			}
			if (substr($l, $i, 2) eq '/*') { $block_comment = 1; $i += 2; next; }
			if ($c eq "'" || $c eq '"')
			{
				$estring = $c eq "'" && $buf =~ /(?:^|[^A-Za-z_0-9])[eE]$/;
				$quote = $c;
				$buf .= $c;
				$i++;
				next;
			}
			if ($c eq '$' && substr($l, $i) =~ /^(\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)/
				&& ($i == 0 || substr($l, $i - 1, 1) !~ /[A-Za-z_0-9]/))
			{
				$dollar = $1;
				$buf .= $dollar;
				$i += length $dollar;
				next;
			}
			if ($c eq ';')
			{
				# psql sends no empty statement
				if ($buf !~ /\S/) { $i++; next; }
				push @stmts, { text => $buf . ';', line => $first_line + $n };
				$ended_here = $#stmts;
				$buf = '';
				$i++;
				$rest_start = $i;
				next;
			}
			if ($c eq '\\')
			{
				# a backslash command: it takes the rest of the line, and sends
				# the statement before it, if any
				if ($buf =~ /\S/)
				{
					push @stmts, { text => $buf, line => $first_line + $n };
				}
				$buf = '';
				undef $ended_here;
				last;
			}
			$buf .= $c;
			$i++;
		}
		$buf .= "\n" if $buf =~ /\S/;
		$buf = '' unless $buf =~ /\S/;
	}
	die "SQL ends inside a statement: $buf" if $buf =~ /\S/;
	for my $s (@stmts)
	{
		$s->{text} =~ s/\s+/ /g;
		$s->{text} =~ s/^ | $//g;
		$s->{text} =~ s/ ;$/;/;
	}
	return @stmts;
}

# A pattern that a query psql logged must match to be the statement $text:
# psql variables (:name, :'name', :"name") stand for anything.
sub statement_pattern
{
	my ($text) = @_;
	my @parts = split /(?<!:):(?:'[A-Za-z_][A-Za-z_0-9]*'|"[A-Za-z_][A-Za-z_0-9]*"|[A-Za-z_][A-Za-z_0-9]*)/, $text, -1;
	$parts[-1] =~ s/;$//;
	return '^' . join('.*?', map { quotemeta } @parts) . ';?$';
}

# The queries of a psql log file (-L) with what each gave back.
sub parse_psql_log
{
	my ($log) = @_;
	my @q;
	while ($log =~ /\*{9} QUERY \*{10}\n(.*?)\n\*{26}\n\n(.*?)(?=\*{9} QUERY \*{10}\n|\z)/sg)
	{
		push @q, { query => $1, output => $2 };
	}
	return @q;
}

sub normalize_output
{
	my ($s) = @_;
	$s =~ s/\s*\|\s*/|/g;
	$s =~ s/^\s+|\s+$//g;
	return $s;
}

sub normalize_sql
{
	my ($s) = @_;
	my ($st) = split_sql(1, split(/\n/, $s), ';');    # drops its comments
	$st = { text => '' } unless $st;
	return $st->{text};
}

my @blocks = quickstart_blocks();
ok(@blocks > 0, 'README.md has ```sql blocks under its Quickstart heading')
  or BAIL_OUT('no Quickstart SQL in README.md');

my $sql = join("\n", map { join("\n", @{ $_->{lines} }) } @blocks) . "\n";
my @stmts = map { split_sql($_->{first}, @{ $_->{lines} }) } @blocks;
my @checked = grep { defined $_->{expected} } @stmts;
ok(@checked >= 5, scalar(@checked) . ' Quickstart statements state their result');

my $ckpt = PostgreSQL::Test::Utils::tempdir;
for my $setup (
	[ 'without checkpoint_dir', '' ],
	[ 'with checkpoint_dir', "state_backend.checkpoint_dir = '$ckpt'\n" ])
{
	my ($what, $conf) = @$setup;
	(my $nodename = "readme $what") =~ s/\W+/_/g;
	my $node = new_state_node($nodename, extension => 0, conf => $conf);
	my $log = $node->basedir . '/quickstart.log';
	my ($ret, $stdout, $stderr) = $node->psql(
		'postgres', $sql,
		on_error_stop => 1,
		extra_params => [ '-L', $log ]);
	is($ret, 0, "$what: the Quickstart runs with ON_ERROR_STOP=1")
	  or diag "stderr:\n$stderr";
	unlike($stderr, qr/\b(?:ERROR|WARNING):/, "$what: no error or warning")
	  or diag $stderr;

	my @q = parse_psql_log(slurp_file($log));
	is(scalar(@q), scalar(@stmts), "$what: psql sent each statement of the Quickstart")
	  or diag join("\n", map { "sent: $_->{query}" } @q);
	for my $k (0 .. $#stmts)
	{
		my $s = $stmts[$k];
		my $q = $q[$k];
		my $got = defined $q ? normalize_sql($q->{query}) : '';
		like($got, qr/${\ statement_pattern($s->{text})}/,
			"$what: README.md line $s->{line} is the statement psql sent")
		  or last;
		next unless defined $s->{expected};
		is( normalize_output($q->{output}),
			normalize_output($s->{expected}),
			"$what: README.md line $s->{line}: $s->{text} -- $s->{expected}");
	}
	$node->stop;
}

##################################################################### Links

my @md = ($readme, sort glob("$root/docs/*.md"));
my %anchor_cache;
my $links = 0;
for my $file (@md)
{
	my @lines = read_lines($file);
	my $rel = File::Spec->abs2rel($file, $root);
	for my $n (prose_lines(@lines))
	{
		my $l = $lines[$n];
		$l =~ s/(`+)(?:(?!\1).)*?\1//g;    # code spans are not links
		my @targets;
		push @targets, $1 while $l =~ /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g;
		push @targets, $1 if $l =~ /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/;
		for my $t (@targets)
		{
			next if $t =~ m{^[A-Za-z][A-Za-z0-9+.-]*:} || $t =~ m{^//};    # URLs
			$links++;
			my ($path, $frag) = split /#/, $t, 2;
			$path =~ s/%([0-9A-Fa-f]{2})/chr(hex $1)/ge;
			my $target =
			    $path eq '' ? $file
			  : $path =~ m{^/} ? "$root$path"
			  :                 File::Spec->catfile(dirname($file), $path);
			my $where = "$rel:" . ($n + 1) . " ($t)";
			ok(-e $target, "$where: the target exists") or next;
			next unless defined $frag && $frag ne '';
			$frag =~ s/%([0-9A-Fa-f]{2})/chr(hex $1)/ge;
			my $abs = abs_path($target);
			$anchor_cache{$abs} //= -f $abs ? anchors(read_lines($abs)) : {};
			ok($anchor_cache{$abs}{$frag}, "$where: #$frag is a heading of the target")
			  or diag 'headings: ' . join(' ', sort keys %{ $anchor_cache{$abs} });
		}
	}
}
ok($links > 0, "$links relative links checked");

done_testing();
