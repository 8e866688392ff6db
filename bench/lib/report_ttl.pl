#!/usr/bin/perl
# report_ttl.pl RAW.tsv RESULTS.md: the state TTL figures of a run (lines
# "tt_*" written by bench/lib/ttl.sh), as ratios against the baselines of
# the same run.  Prints its table on stdout and appends it to the results
# file.  Targets are reported, never asserted.
use strict;
use warnings;

die "usage: report_ttl.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %tps, %bytes, %lat, @sweep, $sweep_bytes);
open(my $in, '<', $rawfile) or die "report_ttl.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'tt_tps') { $tps{"$f[0]|$f[1]"} = $f[2] }
	elsif ($kind eq 'tt_bytes') { $bytes{ $f[0] } = [ @f[ 1, 2 ] ] }
	elsif ($kind eq 'tt_lat') { $lat{ $f[0] } = [ @f[ 1 .. $#f ] ] }
	elsif ($kind eq 'tt_sweep') { @sweep = @f }
	elsif ($kind eq 'tt_sweep_bytes') { $sweep_bytes = $f[0] }
}
close $in;
exit 0 unless %tps || %bytes || @sweep;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub ftps { my ($v) = @_; return defined $v ? sprintf('%.0f', $v) : 'ERR' }

say_ '';
say_ '### State TTL';
say_ '';
say_ "Per statement: pgbench -M prepared, $meta{tt_clients} clients, random keys of $meta{tt_keys}"
  . ' preloaded text keys, memory states with bigint values: one with a TTL of an hour, one'
  . ' without; each figure the mean of two runs, in the order A B B A. Same run, same server.';
say_ '';
say_ '| case | TTL state tps | state without TTL tps | ratio | target | met |';
say_ '| --- | --- | --- | --- | --- | --- |';
for my $op ('value_set', 'value_get')
{
	my ($a, $b) = ($tps{"$op|tt_v"}, $tps{"$op|tt_vu"});
	my $x = ratio($a, $b);
	say_ "| $op | " . ftps($a) . ' | ' . ftps($b) . ' | ' . fx($x) . ' | >= 0.90x | '
	  . (defined $x ? ($x >= 0.9 ? 'yes' : 'no') : '-') . ' |';
}
if ($bytes{tt_v} && $bytes{tt_vu} && $bytes{tt_v}[0] && $bytes{tt_vu}[0])
{
	my ($a, $b) = ($bytes{tt_v}[1] / $bytes{tt_v}[0], $bytes{tt_vu}[1] / $bytes{tt_vu}[0]);
	say_ '';
	say_ sprintf('Bytes per entry (state.states.bytes / entries): %.1f with a TTL, %.1f without'
		  . ' (%s).', $a, $b, fx($a / $b));
}
if (@sweep)
{
	my ($n, $secs) = @sweep;
	say_ '';
	say_ sprintf('Background cleanup (state_backend.ttl_cleanup_key_groups = %s): %d expired keys'
		  . ' (%s bytes) given back %.1f s after expiry, %.0f keys per second.',
		$meta{tt_cleanup_key_groups}, $n, $sweep_bytes // '?', $secs, $secs > 0 ? $n / $secs : 0);
}
if ($lat{quiet} && $lat{sweeping})
{
	# figures: transactions p50 p99 p99.9 max mean (µs)
	my ($q, $s) = ($lat{quiet}, $lat{sweeping});
	say_ '';
	say_ "| writers ($meta{tt_clients} clients, value_set, $meta{tt_writers_seconds} s) | transactions | p50 us | p99 us | p99.9 us |";
	say_ '| --- | --- | --- | --- | --- |';
	say_ "| nothing to clean up | $q->[0] | $q->[1] | $q->[2] | $q->[3] |";
	say_ "| while the cleanup runs | $s->[0] | $s->[1] | $s->[2] | $s->[3] |";
	say_ '';
	say_ 'p99 while the cleanup runs / p99 with nothing to clean up: ' . fx(ratio($s->[2], $q->[2])) . '.';
}

print $out;
open(my $md, '>>', $outfile) or die "report_ttl.pl: $outfile: $!\n";
print $md $out;
close $md;
