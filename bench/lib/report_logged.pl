#!/usr/bin/perl
# report_logged.pl RAW.tsv RESULTS.md: the logged-state figures of a run
# (lines "lg_*" written by bench/lib/logged.sh), as ratios against the
# baselines of the same run.  Prints its table on stdout and appends it to
# the results file that report.pl wrote.  Targets are reported, never
# asserted.
use strict;
use warnings;

die "usage: report_logged.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %tps, %bulk, @replay);
open(my $in, '<', $rawfile) or die "report_logged.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'lg_tps') { $tps{"$f[0]|$f[1]"} = $f[2] }
	elsif ($kind eq 'lg_bulk') { $bulk{ $f[0] } = [ @f[ 1 .. 3 ] ] }
	elsif ($kind eq 'lg_replay') { @replay = @f }
}
close $in;
exit 0 unless %tps || %bulk || @replay;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub ftps { my ($v) = @_; return defined $v ? sprintf('%.0f', $v) : 'ERR' }

my @rows = (
	[ 'value_set, logged / unlogged state', 'off', 'value_set_logged', 'value_set_unlogged', 0.7 ],
	[ 'reduce, logged / unlogged state', 'off', 'reduce_logged', 'reduce_unlogged', 0.7 ],
	[ 'value_set, logged state / logged table upsert', 'on', 'value_set_logged', 'upsert_table', 1.0 ],
	[ 'reduce, logged state / logged table hot update', 'on', 'reduce_logged', 'update_table', 1.0 ],
	[ 'reduce, logged / unlogged rocksdb state', 'off', 'reduce_logged_rocksdb', 'reduce_unlogged_rocksdb', 0.7 ],
	[ 'reduce, logged rocksdb state / logged table hot update', 'on', 'reduce_logged_rocksdb', 'update_table', 1.0 ],
);
say_ '';
say_ '### Logged states';
say_ '';
say_ "Per statement: pgbench -M prepared, $meta{lg_clients} clients, random keys of $meta{lg_keys}"
  . ' preloaded text keys, heap (memory) states unless rocksdb is named; the session flushes its'
  . ' WAL at commit as synchronous_commit says, and the state worker before RocksDB holds a logged'
  . ' change. Same run, same server.';
say_ '';
say_ '| case | synchronous_commit | state tps | baseline tps | ratio | target | met |';
say_ '| --- | --- | --- | --- | --- | --- | --- |';
for my $r (@rows)
{
	my ($label, $sync, $a, $b, $target) = @$r;
	my ($ta, $tb) = ($tps{"$a|$sync"}, $tps{"$b|$sync"});
	my $x = ratio($ta, $tb);
	say_ "| $label | $sync | " . ftps($ta) . ' | ' . ftps($tb) . ' | ' . fx($x)
	  . " | >= ${target}x | " . (defined $x ? ($x >= $target ? 'yes' : 'no') : '-') . ' |';
}
if (%bulk)
{
	say_ '';
	say_ '| bulk value_set, one statement | rows | ms | WAL bytes | WAL bytes per row | time / unlogged |';
	say_ '| --- | --- | --- | --- | --- | --- |';
	for my $s ('lg_b', 'lg_bu')
	{
		next unless $bulk{$s};
		my ($rows, $ms, $wal) = @{ $bulk{$s} };
		my $base = $bulk{lg_bu} ? $bulk{lg_bu}[1] : undef;
		say_ '| ' . ($s eq 'lg_b' ? 'logged state' : 'unlogged state') . " | $rows | $ms | $wal | "
		  . sprintf('%.1f', $wal / $rows) . ' | ' . fx(ratio($ms, $base)) . ' |';
	}
}
if (@replay)
{
	my ($n, $ms) = @replay;
	say_ '';
	say_ sprintf('Replay after a crash (-m immediate right after the bulk statement): %d records in %d ms,'
		  . ' %.0f records per second.', $n, $ms, $ms > 0 ? 1000 * $n / $ms : 0);
}

print $out;
open(my $md, '>>', $outfile) or die "report_logged.pl: $outfile: $!\n";
print $md $out;
close $md;
