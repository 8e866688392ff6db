#!/usr/bin/perl
# report_nexmark.pl RAW.tsv RESULTS.md: the NEXMark figures of a run (lines
# "nx" written by bench/lib/nexmark.sh): events per second of each query
# through window states fed by state.feed beside the same results kept by
# PL/pgSQL triggers in tables, and whether each side's results equal batch
# SQL over the same bids.  Prints its tables on stdout and appends them to
# the results file that report.pl wrote.  The goal is reported, never
# asserted; a difference from batch SQL is nexmark.sh's to count in FAILED.
use strict;
use warnings;

die "usage: report_nexmark.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, @runs, $script);
open(my $in, '<', $rawfile) or die "report_nexmark.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'nx' && $f[0] eq 'run') { push @runs, [ @f[ 1 .. $#f ] ] }
	elsif ($kind eq 'nx' && $f[0] eq 'script') { $script = $f[1] }
}
close $in;
exit 0 unless @runs;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub num { my ($v, $fmt) = @_; return defined $v ? sprintf($fmt, $v) : 'ERR' }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }

# Per query, side and client count: events/s end to end and while fed of
# its best round, and whether the results of every round equal batch SQL.
# A run is [query, side, clients, round, events, feed_s, drain_s, rows,
# batch_rows, differing, answer_rows, answer_differing, late, open,
# failures, status],
# or [query, side, clients, round, 'ERR'].
my (%fig, @clients, %seen_c);
for my $r (@runs)
{
	my ($q, $side, $c, $round, $events, $feed, $drain) = @$r;
	push @clients, $c unless $seen_c{$c}++;
	my $f = $fig{"$q|$side|$c"} //= { ok => 1 };
	if ($events eq 'ERR' || !$feed)
	{
		$f->{err} = 1;
		next;
	}
	$f->{ok} = 0 unless ($r->[15] // '') eq 'ok';
	my $e2e = $events / ($feed + $drain);
	next if defined $f->{e2e} && $f->{e2e} >= $e2e;
	$f->{e2e} = $e2e;
	$f->{fed} = $events / $feed;
}
sub e2e { my $f = $fig{ join '|', @_ }; return $f ? $f->{e2e} : undef }
sub equal
{
	my $f = $fig{ join '|', @_ } or return '-';
	return $f->{err} ? 'failed to run' : $f->{ok} ? 'yes' : 'NO';
}

my %label = (
	q5 => 'q5 hot items (sliding 10 s every 2 s, bids per auction)',
	q7 => 'q7 highest bid (tumbling 10 s, highest price per auction)',
	q11 => 'q11 user sessions (session gap 10 s, bids per bidder)');

say_ '';
say_ '### NEXMark: window states fed by `state.feed` beside tables kept by triggers';
say_ '';
say_ "$meta{nx_events} bids per run (rounded down to whole statements per client), inserted by pgbench clients"
  . " (-M prepared, one statement per transaction) into an unlogged table, $meta{nx_batch} generated rows per"
  . ' statement (`INSERT ... SELECT`, NEXMark\'s generator: hot auctions and bidders), event time at'
  . " $meta{nx_rate} bids per second, each bid up to $meta{nx_jitter} earlier (out of order). Each query runs"
  . ' alone. *states*: a memory window state fed by a statement trigger `EXECUTE FUNCTION state.feed(...)`'
  . " on the bid table, `out_of_orderness => '$meta{nx_ooo}'` (nobody advances the watermark while fed), an"
  . ' unlogged table as its `emit_table` (the timer worker inserts each fired window); after the feed the watermark goes to'
  . ' `infinity` and the run ends when every window is out. *tables*: a PL/pgSQL statement trigger on the'
  . ' same table keeping the same results in an unlogged table (`INSERT ... SELECT ... GROUP BY ... ON'
  . ' CONFLICT DO UPDATE` for q5 and q7; for q11 one statement that takes out the stored sessions the'
  . ' statement\'s own sessions meet, `DELETE ... RETURNING`, and inserts what they make together, each'
  . ' bidder locked first). *none*: the inserts alone.'
  . ' End to end: the bids over the time from the start of pgbench until every result is in its table.'
  . ' With several rounds (`BENCH_ROUNDS`) each run counts with its best round. Equal: the side\'s results (key, window start, window end, result) and the query\'s answer (q5: the'
  . ' auctions with the most bids per window; q7: the bids at the highest price of each window; q11: the'
  . ' sessions) equal batch SQL over the same bids, row for row. Same run, same server.';
say_ '';
say_ '| query | clients | states events/s | tables events/s | states / tables | goal | states while fed | states equal batch SQL | tables equal batch SQL |';
say_ '| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |';
for my $q (qw(q5 q7 q11))
{
	for my $c (@clients)
	{
		next unless $fig{"$q|states|$c"} || $fig{"$q|tables|$c"};
		my $r = ratio(e2e($q, 'states', $c), e2e($q, 'tables', $c));
		say_ "| $label{$q} | $c | " . num(e2e($q, 'states', $c), '%.0f') . ' | ' . num(e2e($q, 'tables', $c), '%.0f')
		  . ' | ' . fx($r) . ' | 2x: ' . (defined $r ? ($r >= 2 ? 'met' : 'missed') : '-') . ' | '
		  . num(($fig{"$q|states|$c"} // {})->{fed}, '%.0f') . ' | '
		  . equal($q, 'states', $c) . ' | ' . equal($q, 'tables', $c) . ' |';
	}
}
say_ '';
say_ 'The floor, the same inserts into the bid table without a trigger: '
  . join('; ', map { num(e2e('-', 'none', $_), '%.0f') . " events/s at $_ client(s)" } grep { $fig{"-|none|$_"} } @clients)
  . '. No side can pass it: per query, states and tables are at '
  . join('; ', map {
	  my $c = $_;
	  "$c client(s): " . join(', ', map { "$_ " . fx(ratio(e2e($_, 'states', $c), e2e('-', 'none', $c))) . ' and '
			  . fx(ratio(e2e($_, 'tables', $c), e2e('-', 'none', $c))) } qw(q5 q7 q11))
	} grep { $fig{"-|none|$_"} } @clients)
  . ' of it.';
say_ '';
# Per event, the time a side adds to the inserts alone.
sub added
{
	my ($q, $side, $c) = @_;
	my ($e, $floor) = (e2e($q, $side, $c), e2e('-', 'none', $c));
	return undef unless $e && $floor;
	return 1 / $e - 1 / $floor;
}
say_ 'So states / tables cannot pass the tables\' time over the floor\'s (a side that added nothing to the'
  . ' inserts), and the time each side adds to the inserts (per event, end to end less the floor\'s) says'
  . ' how their work compares: '
  . join('; ', map {
	  my $c = $_;
	  "$c client(s): " . join(', ', map {
			my ($t, $st) = (added($_, 'tables', $c), added($_, 'states', $c));
			"$_ at most " . fx(ratio(e2e('-', 'none', $c), e2e($_, 'tables', $c)))
			  . ' (the tables add ' . (defined $t && defined $st && $t > 0 && $st > 0 ? fx($t / $st) : '-')
			  . ' what the states add)'
		} grep { $fig{"$_|states|$c"} && $fig{"$_|tables|$c"} } qw(q5 q7 q11))
	} grep { $fig{"-|none|$_"} } @clients)
  . '.';
say_ '';
say_ 'Runs (feed: pgbench\'s time; drain: from its end until every window fired, states only; rows: the'
  . ' side\'s result rows; batch SQL rows: the same query\'s over every bid; differing: rows in one of the side\'s results and batch SQL\'s and not in the other;'
  . ' answer: the same for the query\'s answer; late: `state.stats.late`):';
say_ '';
say_ '| query | side | clients | round | events | feed (s) | drain (s) | events/s end to end | events/s while fed | rows | batch SQL rows | differing | answer rows | answer differing | late | check |';
say_ '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |';
for my $r (@runs)
{
	my ($q, $side, $c, $round, $events, $feed, $drain, $rows, $want, $diff, $arows, $adiff, $late, $open, $fail, $status) = @$r;
	if ($events eq 'ERR' || !$feed)
	{
		say_ "| $q | $side | $c | $round | ERR | | | | | | | | | | | failed to run |";
		next;
	}
	say_ "| $q | $side | $c | $round | $events | $feed | $drain | " . num($events / ($feed + $drain), '%.0f') . ' | '
	  . num($events / $feed, '%.0f') . " | $rows | $want | $diff | $arows | $adiff | $late | "
	  . ($side eq 'none' ? '-' : $status eq 'ok' ? 'equal' : 'DIFFER') . ' |';
}
if (defined $script)
{
	(my $s = $script) =~ s/\s+$//;
	$s =~ s/\|/\\|/g;
	say_ '';
	say_ "pgbench script: `$s`";
}
say_ '';
say_ 'Time of the group: ' . ($meta{nx_seconds} // '-') . ' s.';

print $out;
open(my $md, '>>', $outfile) or die "report_nexmark.pl: $outfile: $!\n";
print $md $out;
close $md;
