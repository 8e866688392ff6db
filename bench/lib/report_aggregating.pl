#!/usr/bin/perl
# report_aggregating.pl RAW.tsv RESULTS.md: the aggregating-state figures
# of a run (lines "ag_tps OP TPS" and "ag_scan WHAT ROWS MS" written by
# bench/lib/aggregating.sh), as ratios against baselines of the same run.
# Prints its table on stdout and appends it to the results file.
use strict;
use warnings;

die "usage: report_aggregating.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%tps, %scan, %meta);
open(my $in, '<', $rawfile) or die "report_aggregating.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	$tps{ $f[0] } = $f[1] if $kind eq 'ag_tps';
	$scan{ $f[0] } = [ $f[1], $f[2] ] if $kind eq 'ag_scan';
	$meta{ $f[0] } = $f[1] if $kind eq 'meta';
}
close $in;
exit 0 unless %tps || %scan;

my $ratio = sub { my ($a, $b) = @_; return defined $a && defined $b && $b > 0 ? sprintf('%.2fx', $a / $b) : '-' };
my $out = "\n### Aggregating states and entries()\n\n";
if (%tps)
{
	$out .= "Per statement: `pgbench -M prepared`, $meta{ag_clients} clients, random keys of $meta{ag_keys}"
	  . " preloaded text keys, memory states; each figure the mean of two runs (order A B C D D C B A).\n\n"
	  . "| statement | tps | x reduce | x unlogged UPDATE |\n| --- | ---: | ---: | ---: |\n";
	for my $op ([ 'aggregate', "`state.aggregate('ag_avg', k, v)`, avg(float8)" ],
		[ 'aggregate2', "`state.aggregate('ag_corr', k, v, v)`, corr(float8, float8)" ],
		[ 'reduce', "`state.reduce('ag_sum', k, v)`, sum" ],
		[ 'update', '`UPDATE ag_t SET n = n + 1, s = s + v WHERE k = $1` (unlogged)' ])
	{
		my $t = $tps{ $op->[0] };
		$out .= "| $op->[1] | " . (defined $t ? sprintf('%.0f', $t) : 'ERR') . ' | '
		  . $ratio->($t, $tps{reduce}) . ' | ' . $ratio->($t, $tps{update}) . " |\n";
	}
}
if (%scan)
{
	$out .= "\nReading every row (best of three, psql's `\\timing`):\n\n"
	  . "| statement | rows | ms | x the table |\n| --- | ---: | ---: | ---: |\n";
	for my $w ([ 'entries', "`SELECT sum(length(key)), sum(value) FROM state.entries('ag_e', ''::text, 0::bigint)`" ],
		[ 'table', '`SELECT sum(length(k)), sum(v) FROM (SELECT * FROM ag_et) t` (unlogged, the same rows)' ])
	{
		my $s = $scan{ $w->[0] } or next;
		$out .= "| $w->[1] | $s->[0] | " . sprintf('%.0f', $s->[1]) . ' | '
		  . $ratio->($s->[1], $scan{table} ? $scan{table}[1] : undef) . " |\n";
	}
	if (grep { /^snapshot_entries_/ } keys %scan)
	{
		$out .= "\nReading a snapshot of the same state (best of three): `snapshot_entries`, summed as above,"
		  . " beside `restore` of the same snapshot into a database of its own.\n\n"
		  . "| format | rows | snapshot_entries ms | restore ms | x restore |\n| --- | ---: | ---: | ---: | ---: |\n";
		for my $f ('native', 'canonical')
		{
			my ($q, $r) = ($scan{"snapshot_entries_$f"}, $scan{"restore_$f"});
			next unless $q || $r;
			$out .= "| $f | " . ($q ? $q->[0] : $r->[0]) . ' | ' . ($q ? sprintf('%.0f', $q->[1]) : 'ERR') . ' | '
			  . ($r ? sprintf('%.0f', $r->[1]) : 'ERR') . ' | ' . $ratio->($q ? $q->[1] : undef, $r ? $r->[1] : undef) . " |\n";
		}
	}
}
print $out;
open(my $md, '>>', $outfile) or die "report_aggregating.pl: $outfile: $!\n";
print $md $out;
close $md;
