#!/usr/bin/perl
# report_transactional.pl RAW.tsv RESULTS.md: the transactional-state
# figures of a run (lines "tx_tps" written by bench/lib/transactional.sh), as
# ratios against the baselines of the same run.  Prints its table on stdout
# and appends it to the results file that report.pl wrote.  Targets are
# reported, never asserted.
use strict;
use warnings;

die "usage: report_transactional.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %tps);
open(my $in, '<', $rawfile) or die "report_transactional.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'tx_tps') { $tps{"$f[0]|$f[1]"} = $f[2] }
}
close $in;
exit 0 unless %tps;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub ftps { my ($v) = @_; return defined $v ? sprintf('%.0f', $v) : 'ERR' }

my $batch = $meta{tx_batch} // '?';
my @rows = (
	[ 'reduce, autocommit: transactional / plain state', 'single', 'transactional', 'plain', 0.8 ],
	[ 'reduce, autocommit: transactional state / unlogged table UPDATE', 'single', 'transactional', 'table', 1.0 ],
	[ "$batch reduce in a transaction: transactional / plain state", 'batch', 'transactional', 'plain', 0.8 ],
	[ "$batch reduce in a transaction: transactional state / unlogged table UPDATE", 'batch', 'transactional', 'table', 1.0 ],
	[ 'rocksdb, autocommit: transactional (staged) / plain state', 'single', 'rocksdb_transactional', 'rocksdb_plain', undef ],
	[ 'rocksdb, autocommit: transactional state / unlogged table UPDATE', 'single', 'rocksdb_transactional', 'table', undef ],
	[ "rocksdb, $batch reduce in a transaction: transactional (staged) / plain state", 'batch', 'rocksdb_transactional', 'rocksdb_plain', undef ],
	[ "rocksdb, $batch reduce in a transaction: transactional state / unlogged table UPDATE", 'batch', 'rocksdb_transactional', 'table', undef ],
);
say_ '';
say_ '### Transactional states';
say_ '';
say_ "pgbench -M prepared, $meta{tx_clients} clients, random keys of $meta{tx_keys} preloaded text keys,"
  . ' reducing states, one transactional and one not, on the heap (memory) and on rocksdb, and an unlogged table'
  . " (UPDATE ... SET v = v + 1). A transaction of $batch takes keys b, b + S, b + 2S, ... (S: keys / $batch;"
  . ' b random), in one order for all, so that the table cannot deadlock. Figures are'
  . ' transactions per second. Same run, same server.';
say_ '';
say_ '| case | state tps | baseline tps | ratio | target | met |';
say_ '| --- | --- | --- | --- | --- | --- |';
for my $r (@rows)
{
	my ($label, $shape, $a, $b, $target) = @$r;
	my ($ta, $tb) = ($tps{"$shape|$a"}, $tps{"$shape|$b"});
	my $x = ratio($ta, $tb);
	say_ "| $label | " . ftps($ta) . ' | ' . ftps($tb) . ' | ' . fx($x)
	  . (defined $target
		? " | >= ${target}x | " . (defined $x ? ($x >= $target ? 'yes' : 'no') : '-') . ' |'
		: ' | - | - |');
}

print $out;
open(my $md, '>>', $outfile) or die "report_transactional.pl: $outfile: $!\n";
print $md $out;
close $md;
