#!/usr/bin/perl
# report_standby.pl RAW.tsv RESULTS.md: the hot standby figures of a run
# (lines "sb" written by bench/lib/standby.sh): reads on the standby beside
# the same reads on the primary, the standby's lag under writes, and the
# first call after a promotion beside the first call after a crash restart.
# Prints its table on stdout and appends it to the results file.
use strict;
use warnings;

die "usage: report_standby.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %tps, %lag, %first);
open(my $in, '<', $rawfile) or die "report_standby.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'sb' && $f[0] eq 'tps') { $tps{ $f[1] } = [ $f[2], $f[3] ] }
	elsif ($kind eq 'sb' && $f[0] eq 'lag') { $lag{ $f[1] } = $f[2] }
	elsif ($kind eq 'sb' && ($f[0] eq 'promote' || $f[0] eq 'restart')) { $first{"$f[0]|$f[1]"} = $f[2] }
}
close $in;
exit 0 unless %tps || %lag || %first;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub ok_ { my ($v) = @_; return defined $v && $v ne '' && $v ne 'ERR' && $v > 0 }
sub num { my ($v, $fmt) = @_; return ok_($v) ? sprintf($fmt, $v) : 'ERR' }

say_ '';
say_ '### Hot standby';
say_ '';
say_ "A logged value state of $meta{sb_keys} int keys (bigint values) on the bench server, the"
  . ' primary, and a hot standby made from it with pg_basebackup in the same run, on the same'
  . " $meta{sb_cores} cores (each server's clients and processes share them, one server at a time"
  . " is busy). Reads: pgbench -M prepared, $meta{sb_clients} clients, random keys, on the primary,"
  . ' the standby, the standby and the primary (each figure the mean of its two runs).';
say_ '';
say_ '| statement | primary (calls/s) | standby (calls/s) | standby / primary | goal |';
say_ '| --- | --- | --- | --- | --- |';
for my $name (qw(floor value_get))
{
	my ($p, $s) = @{ $tps{$name} // [] };
	my $label = $name eq 'floor' ? 'the no-op C function' : 'state.value_get';
	my $ratio = (ok_($p) && ok_($s)) ? $s / $p : undef;
	say_ "| $label | " . num($p, '%.0f') . ' | ' . num($s, '%.0f') . ' | '
	  . (defined $ratio ? sprintf('%.2fx', $ratio) : '-') . ' | '
	  . ($name eq 'value_get'
		? (defined $ratio ? ($ratio >= 0.9 ? '>= 0.9x: met' : '>= 0.9x: not met') : '>= 0.9x')
		: '') . ' |';
}

if (%lag)
{
	my @b = split / /, ($lag{bytes} // '');
	my @m = split / /, ($lag{ms} // '');
	say_ '';
	say_ "Lag under a steady write load: $meta{sb_writers} clients of value_set on the primary"
	  . ' (' . num($lag{writes_tps}, '%.0f') . ' calls/s), the standby\'s state.worker read every'
	  . ' 100 ms (' . ($lag{samples} // 0) . ' samples): how far what the state worker applied was'
	  . ' behind what the standby replayed.';
	say_ '';
	say_ '| | median | p99 | max |';
	say_ '| --- | --- | --- | --- |';
	say_ '| standby_lag_bytes | ' . join(' | ', map { $_ // '-' } @b[0 .. 2]) . ' |';
	say_ '| standby_lag_ms | ' . join(' | ', map { $_ // '-' } @m[0 .. 2]) . ' |';
}

if (%first)
{
	say_ '';
	say_ "The first value_get that succeeds on the standby, timed from the return of pg_ctl promote"
	  . ' (it goes on from what it applied: no checkpoint loaded), and from the start of the same'
	  . ' server after a crash (-m immediate), which loads the newest checkpoint and replays WAL from'
	  . " its cut, as a promotion did before standbys applied WAL ($meta{sb_keys} entries):";
	say_ '';
	say_ '| | seconds to the first call |';
	say_ '| --- | --- |';
	say_ '| after promotion | ' . ($first{'promote|first_call_s'} // 'ERR') . ' |';
	say_ '| after a crash restart (load + replay) | ' . ($first{'restart|first_call_s'} // 'ERR') . ' |';
}

print $out;
open(my $md, '>>', $outfile) or die "report_standby.pl: $outfile: $!\n";
print $md $out;
close $md;
