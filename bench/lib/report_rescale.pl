#!/usr/bin/perl
# report_rescale.pl RAW.tsv RESULTS.md: the rescaling figures of a run
# (lines "rs_step NAME STEP MS ROWS" written by bench/lib/rescale.sh), as
# ratios against the full restore of the same snapshot in the same run.
# Prints its table on stdout and appends it to the results file.
use strict;
use warnings;

die "usage: report_rescale.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my %step;
open(my $in, '<', $rawfile) or die "report_rescale.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	$step{"$f[0]|$f[1]"} = [ $f[2], $f[3] ] if defined $kind && $kind eq 'rs_step';
}
close $in;
exit 0 unless %step;

my $out = "\n### Rescaling\n\n"
  . "One native snapshot of a value state (bigint keys and values), restored whole, as part 0 of 3,"
  . " and rebuilt from the snapshots of its three parts (one restore of the three paths). Same"
  . " run, same server; ratios against the full restore (the faster of one before and one after).\n\n"
  . "| state | entries | full restore ms | part 0 of 3 ms | ratio | merge of 3 parts ms | ratio |\n"
  . "| --- | --- | --- | --- | --- | --- | --- |\n";
for my $name ('heap', 'rocks')
{
	my $full = $step{"$name|full"} or next;
	my $full2 = $step{"$name|full2"};
	$full = $full2 if $full2 && $full2->[0] < $full->[0];
	my ($part, $merge) = ($step{"$name|part0"}, $step{"$name|merge"});
	my $ms = sub { my ($s) = @_; return $s ? sprintf('%.0f', $s->[0]) : 'ERR' };
	my $r = sub { my ($s) = @_; return $s && $full->[0] > 0 ? sprintf('%.2fx', $s->[0] / $full->[0]) : '-' };
	$out .= '| ' . ($name eq 'heap' ? 'memory' : 'rocksdb') . " | $full->[1] | " . $ms->($full) . ' | '
	  . $ms->($part) . ' | ' . $r->($part) . ' | ' . $ms->($merge) . ' | ' . $r->($merge) . " |\n";
}
print $out;
open(my $md, '>>', $outfile) or die "report_rescale.pl: $outfile: $!\n";
print $md $out;
close $md;
