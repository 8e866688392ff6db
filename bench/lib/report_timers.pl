#!/usr/bin/perl
# report_timers.pl RAW.tsv RESULTS.md: the timers figures of a run (lines
# "tm" written by bench/lib/timers.sh), with ratios against the baselines of
# the same run.  Prints its table on stdout and appends it to the results
# file that report.pl wrote.  Targets are reported, never asserted.
use strict;
use warnings;

die "usage: report_timers.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %tm);
open(my $in, '<', $rawfile) or die "report_timers.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'tm') { $tm{"$f[0]|$f[1]"} = $f[2] }
}
close $in;
exit 0 unless %tm;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub num { my ($v, $fmt) = @_; return (defined $v && $v ne '') ? sprintf($fmt, $v) : 'ERR' }
sub met { my ($ok) = @_; return defined $ok ? ($ok ? 'yes' : 'no') : '-' }

my ($reg, $val) = ($tm{'tps|register'}, $tm{'tps|value_set'});
my $ratio = (defined $reg && defined $val && $val > 0) ? $reg / $val : undef;
my $fire = $tm{'fire|per_second'};
my $lag = $tm{'lag|p99_ms'};
my $n = $meta{tm_fire} || 1;
my ($sb, $rss, $tb) =
  ($tm{'memory|state_bytes'}, $tm{'memory|worker_rss_kb'}, $tm{'memory|table_bytes'});
my $per_state = defined $sb ? $sb / $n : undef;
my $per_index = defined $rss ? $rss * 1024 / $n : undef;
my $per_table = defined $tb ? $tb / $n : undef;
my $per_ours = (defined $per_state && defined $per_index) ? $per_state + $per_index : undef;

say_ '';
say_ '### Timers';
say_ '';
say_ "Memory (heap) states. Registration: pgbench -M prepared, $meta{tm_clients} clients, random keys"
  . " of $meta{tm_keys}. Firing: $meta{tm_fire} event-time timers, a handler that inserts into an"
  . ' unlogged table, one advance of the watermark. Lag: processing-time timers due at once,'
  . " registered at $meta{tm_rate}/s for $meta{tm_lag_secs} s. Memory: the state's bytes and the"
  . " growth of the timer worker's RssAnon while it read them, per pending timer. Same run, same server.";
say_ '';
say_ '| case | figure | baseline | ratio | target | met |';
say_ '| --- | --- | --- | --- | --- | --- |';
say_ '| timer_register / value_set (tps) | ' . num($reg, '%.0f') . ' | ' . num($val, '%.0f') . ' | '
  . (defined $ratio ? sprintf('%.2fx', $ratio) : '-') . ' | >= 0.8x | '
  . met(defined $ratio ? $ratio >= 0.8 : undef) . ' |';
say_ '| timers fired per second | ' . num($fire, '%.0f') . ' | - | - | >= 20000 | '
  . met(defined $fire ? $fire >= 20000 : undef) . ' |';
say_ '| due-to-fired lag, p99 (ms) | ' . num($lag, '%.1f') . ' | - | - | < 200 | '
  . met((defined $lag && $lag ne '') ? $lag < 200 : undef) . ' |';
say_ '| bytes per pending timer (state ' . num($per_state, '%.0f') . ' + worker ' . num($per_index, '%.0f')
  . ') / unlogged table with an index on at | ' . num($per_ours, '%.0f') . ' | ' . num($per_table, '%.0f')
  . ' | ' . (defined $per_ours && $per_table ? sprintf('%.2fx', $per_ours / $per_table) : '-')
  . ' | reported | - |';

print $out;
open(my $md, '>>', $outfile) or die "report_timers.pl: $outfile: $!\n";
print $md $out;
close $md;
