#!/usr/bin/perl
# report_windows.pl RAW.tsv RESULTS.md: the window-state figures of a run
# (lines "wn" written by bench/lib/windows.sh), with ratios against the
# baselines of the same run.  Prints its tables on stdout and appends them to
# the results file that report.pl wrote.  The goal is reported, never
# asserted; the sanity check (the emitted counts add up to the events fed)
# is windows.sh's, which counts a failure in FAILED.
use strict;
use warnings;

die "usage: report_windows.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, @runs, @floor, @floor_pipe, %emit);
open(my $in, '<', $rawfile) or die "report_windows.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'wn' && $f[0] eq 'run') { push @runs, [ @f[ 1 .. $#f ] ] }
	elsif ($kind eq 'wn' && $f[0] eq 'floor' && $f[2] ne 'ERR') { push @floor, $f[2] }
	elsif ($kind eq 'wn' && $f[0] eq 'floor_pipe' && $f[2] ne 'ERR') { push @floor_pipe, $f[2] }
	elsif ($kind eq 'wn' && $f[0] eq 'emit' && $f[3] ne 'ERR' && ($f[5] // '') eq 'ok')
	{
		# microseconds a window: wall clock, the timer worker on a CPU
		push @{ $emit{ $f[1] }{wall} }, $f[4] / $f[3] * 1e6;
		push @{ $emit{ $f[1] }{cpu} }, $f[6] / $f[3] * 1e6 if defined $f[6] && $f[6] > 0;
	}
}
close $in;
exit 0 unless @runs;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub num { my ($v, $fmt) = @_; return (defined $v && $v ne '') ? sprintf($fmt, $v) : 'ERR' }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub mean
{
	my @v = grep { defined } @_;
	return undef unless @v;
	my $s = 0;
	$s += $_ for @v;
	return $s / @v;
}

# Per case: the runs' figures (a run is [case, n, events, tps, wall, drain,
# windows, during, sum, expected, late, status], or [case, n, 'ERR']).
my (%case, @order);
for my $r (@runs)
{
	my ($c, $n, $events, $tps, $wall, $drain, $windows, $during, $sum, $expected, $late, $status) = @$r;
	push @order, $c unless $case{$c};
	my $k = $case{$c} //= { e2e => [], fed => [], windows => [], epw => [], drain => [], ok => 1 };
	if (!defined $tps || $events eq 'ERR')
	{
		$k->{ok} = 0;
		$k->{err} = 1;
		next;
	}
	$k->{ok} = 0 unless $status eq 'ok';
	push @{ $k->{e2e} }, $events / ($wall + $drain) if $wall + $drain > 0;
	push @{ $k->{fed} }, $tps;
	push @{ $k->{windows} }, $windows;
	push @{ $k->{epw} }, $events / $windows if $windows > 0;
	push @{ $k->{drain} }, $drain;
}
# A case with a run that failed to run has no figure.
my %fig;
for my $c (@order)
{
	my $k = $case{$c};
	$fig{$c} = $k->{err} ? {} : {
		e2e => mean(@{ $k->{e2e} }), fed => mean(@{ $k->{fed} }), windows => mean(@{ $k->{windows} }),
		epw => mean(@{ $k->{epw} }), drain => mean(@{ $k->{drain} }) };
}

my %label = (
	tumbling => 'tumbling 1 min, window state',
	table => 'tumbling 1 min, unlogged table (upsert, DELETE ... RETURNING)',
	sliding => 'sliding 5 min / 1 min, window state',
	session => 'session, 30 s gap, window state',
	tumbling_batch => "tumbling 1 min, window state, $meta{wn_batch} events per statement",
	table_batch => "tumbling 1 min, unlogged table, $meta{wn_batch} events per statement (grouped, upsert)",
	tumbling_pipe => "tumbling 1 min, window state, pipelined ($meta{wn_pipe} events a round trip, a transaction each)",
	table_pipe => "tumbling 1 min, unlogged table, pipelined ($meta{wn_pipe} events a round trip, a transaction each)");
my $floor = mean(@floor);
my $floor_pipe = mean(@floor_pipe);
sub fed { my ($c) = @_; return $fig{$c} ? $fig{$c}{fed} : undef }

say_ '';
say_ '### Window states';
say_ '';
say_ "pgbench -M prepared, $meta{wn_clients} clients, one event per statement on random keys of $meta{wn_keys}"
  . ($meta{wn_pipe} ? " (the pipelined cases: $meta{wn_pipe} events sent in one round trip with pgbench's"
	  . ' `\startpipeline`, each event in its own transaction, BEGIN; the statement; COMMIT)' : '') . ','
  . " $meta{wn_warmup} s of warm-up and $meta{wn_seconds} s; event time runs at $meta{wn_speed}x the clock"
  . " (a 1-minute window lasts " . sprintf('%.1f', 60 / ($meta{wn_speed} || 1)) . ' s); once a second one'
  . " more session closes what is older than the events' clock less $meta{wn_margin} (advance_watermark;"
  . ' for the table, DELETE ... RETURNING of the windows ended by then, into an unlogged table, as the'
  . ' emit function of the memory window states inserts into one), and after pgbench everything is closed.'
  . ' End to end: all events over the time from the start of pgbench until every window is in the'
  . ' output table (the timer worker\'s firing included); while fed: pgbench\'s per-second figures after'
  . " the warm-up. Runs in the order $meta{wn_order}; a case run twice counts with the mean of its runs."
  . ' Same run, same server.';
say_ '';
say_ '| case | events/s end to end | events/s while fed | windows emitted | events per window | drain after the feed (s) | counts add up |';
say_ '| --- | --- | --- | --- | --- | --- | --- |';
for my $c (@order)
{
	my $f = $fig{$c};
	say_ "| $label{$c} | " . num($f->{e2e}, '%.0f') . ' | ' . num($f->{fed}, '%.0f') . ' | '
	  . num($f->{windows}, '%.0f') . ' | ' . num($f->{epw}, '%.2f') . ' | ' . num($f->{drain}, '%.2f') . ' | '
	  . ($case{$c}{ok} ? 'yes' : 'NO') . ' |';
}

say_ '';
say_ 'The floor, the statement of one event with a C function that does nothing in place of the call'
  . ' (SELECT bench.noop(k, t::text)): ' . num($floor, '%.0f') . ' statements/s. One event per statement,'
  . ' no case can pass it: per event, the window state runs at '
  . fx(ratio(fed('tumbling'), $floor)) . ' of it while fed, the table at '
  . fx(ratio(fed('table'), $floor)) . '; so no counting, however cheap, can run more than '
  . fx(ratio($floor, fed('table'))) . ' the table one event per round trip: the round trip (pgbench, the'
  . ' protocol, a transaction) is most of what both pay.';
if (@floor_pipe)
{
	say_ '';
	say_ "Pipelined, the same floor statement in the same pipeline of $meta{wn_pipe} transactions"
	  . ' (BEGIN; SELECT bench.noop(k, t::text); COMMIT): ' . num($floor_pipe, '%.0f') . ' events/s; the window'
	  . ' state runs at ' . fx(ratio(fed('tumbling_pipe'), $floor_pipe)) . ' of it, the table at '
	  . fx(ratio(fed('table_pipe'), $floor_pipe)) . ': without a round trip per event, what each does per'
	  . ' event shows.';
}
say_ '';
say_ '| ratio | end to end | while fed | goal | met |';
say_ '| --- | --- | --- | --- | --- |';
my @ratios = (
	[ "tumbling, pipelined ($meta{wn_pipe} events a round trip, a transaction each): window state / unlogged table",
	  'tumbling_pipe', 'table_pipe', 2.0 ],
	[ 'tumbling, one event per round trip: window state / unlogged table', 'tumbling', 'table', undef ],
	[ 'sliding / tumbling (window states)', 'sliding', 'tumbling', undef ],
	[ 'session / tumbling (window states)', 'session', 'tumbling', undef ],
	[ "tumbling, $meta{wn_batch} events per statement: window state / unlogged table", 'tumbling_batch', 'table_batch', undef ],
);
for my $r (@ratios)
{
	my ($l, $a, $b, $goal) = @$r;
	next unless $fig{$a} && $fig{$b};
	my $e = ratio($fig{$a}{e2e}, $fig{$b}{e2e});
	my $w = ratio($fig{$a}{fed}, $fig{$b}{fed});
	my $ok = $case{$a}{ok} && $case{$b}{ok};
	say_ "| $l | " . fx($e) . ' | ' . fx($w) . ' | '
	  . (defined $goal ? ">= ${goal}x end to end" : 'reported') . ' | '
	  . (defined $goal && defined $e ? (($e >= $goal && $ok) ? 'yes' : 'no') : '-') . ' |';
}

if (%emit)
{
	my %m;
	for my $k (qw(emit_fn emit_table))
	{
		$m{$k}{$_} = mean(@{ $emit{$k}{$_} // [] }) for qw(wall cpu);
	}
	say_ '';
	say_ "The cost of emitting a window, apart from feeding: $meta{wn_emit_keys} keys with one window each (memory,"
	  . ' tumbling, sum), the watermark advanced past them all, timed until every window is a row of an unlogged'
	  . ' table (polled every 20 ms), and the timer worker\'s time on a CPU meanwhile (/proc/PID/schedstat: what'
	  . ' the other processes of a busy machine do not stretch); mean of the runs, alternating. The goal is judged'
	  . ' on the worker\'s CPU time:';
	say_ '';
	say_ '| emitted through | µs a window, wall | µs a window, worker CPU | runs | CPU against the emit function | goal | met |';
	say_ '| --- | --- | --- | --- | --- | --- | --- |';
	say_ '| an SQL emit function inserting the row | ' . num($m{emit_fn}{wall}, '%.1f') . ' | '
	  . num($m{emit_fn}{cpu}, '%.2f') . ' | ' . scalar(@{ $emit{emit_fn}{wall} // [] }) . ' | 1.00x | | |';
	my $r = ratio($m{emit_table}{cpu}, $m{emit_fn}{cpu});
	say_ '| emit_table (the timer worker inserts the row) | ' . num($m{emit_table}{wall}, '%.1f') . ' | '
	  . num($m{emit_table}{cpu}, '%.2f') . ' | ' . scalar(@{ $emit{emit_table}{wall} // [] }) . ' | '
	  . fx($r) . ' | at most 0.50x | ' . (defined $r ? ($r <= 0.5 ? 'yes' : 'no') : '-') . ' |';
}

say_ '';
say_ 'Runs (windows: rows emitted; fired: state.stats.timers_fired; sum: of the emitted counts; expected: the events pgbench fed, times 5 for sliding windows; late: state.stats.late):';
say_ '';
say_ '| case | run | events | feed (s) | drain (s) | events/s end to end | events/s while fed | windows | fired | emitted while fed | sum | expected | late | check |';
say_ '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |';
for my $r (@runs)
{
	my ($c, $n, $events, $tps, $wall, $drain, $windows, $during, $sum, $expected, $late, $status, $fired) = @$r;
	if (!defined $tps || $events eq 'ERR')
	{
		say_ "| $c | $n | ERR | | | | | | | | | | | failed to run |";
		next;
	}
	say_ "| $c | $n | $events | " . sprintf('%.2f', $wall) . ' | ' . sprintf('%.2f', $drain) . ' | '
	  . num(($wall + $drain) > 0 ? $events / ($wall + $drain) : undef, '%.0f') . ' | ' . num($tps, '%.0f')
	  . " | $windows | " . ($fired // '-') . " | $during | $sum | $expected | $late | " . ($status eq 'ok' ? 'ok' : 'FAILED') . ' |';
}

print $out;
open(my $md, '>>', $outfile) or die "report_windows.pl: $outfile: $!\n";
print $md $out;
close $md;
