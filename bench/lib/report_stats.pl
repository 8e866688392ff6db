#!/usr/bin/perl
# report_stats.pl RAW.tsv RESULTS.md: what counting state.stats costs
# (lines "sc_tps CASE:on|off TPS" written by bench/lib/stats.sh), as a ratio of
# the same run.  Prints its table on stdout and appends it to the results.
use strict;
use warnings;

die "usage: report_stats.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%tps, %meta);
open(my $in, '<', $rawfile) or die "report_stats.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	$tps{ $f[0] } = $f[1] if $kind eq 'sc_tps';
	$meta{ $f[0] } = $f[1] if $kind eq 'meta';
}
close $in;
exit 0 unless %tps;

my $out = "\n### What state.stats counting costs\n\n"
  . "`state.value_get` per statement: `pgbench -M prepared`, $meta{sc_clients} clients, random keys of"
  . " $meta{sc_keys} text keys; with `state_backend.track_stats` on and off for the whole server,"
  . ($meta{sc_order} && $meta{sc_order} eq 'on off' ? ' one run of each (order on off).'
	: ' each the mean of two runs (order on off off on).')
  . " The memory state counts in the sessions; the"
  . " rocksdb state's values are too large for the shared cache, so every read is the worker's,"
  . " from SST files, where RocksDB also counts block cache hits and misses.\n\n"
  . "| state | counting | tps | x off |\n| --- | --- | ---: | ---: |\n";
for my $c ('memory', 'rocksdb')
{
	my $off = $tps{"$c:off"};
	for my $m ('on', 'off')
	{
		my $t = $tps{"$c:$m"};
		$out .= "| $c | $m | " . (defined $t ? sprintf('%.0f', $t) : 'ERR') . ' | '
		  . (defined $t && $off ? sprintf('%.3fx', $t / $off) : '-') . " |\n";
	}
}
print $out;
open(my $md, '>>', $outfile) or die "report_stats.pl: $outfile: $!\n";
print $md $out;
close $md;
