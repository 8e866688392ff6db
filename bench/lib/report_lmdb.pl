#!/usr/bin/perl
# report_lmdb.pl RAW.tsv RESULTS.md: the lmdb figures of a run (lines
# "lmd_*" written by bench/lib/lmdb.sh), beside memory and rocksdb and the
# floors of the same run.  Prints its tables on stdout and appends them to
# the results file.  Targets are reported, never asserted.
use strict;
use warnings;

die "usage: report_lmdb.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %tps, %load, %snap);
open(my $in, '<', $rawfile) or die "report_lmdb.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'lmd_tps') { push @{ $tps{"$f[0]|$f[1]|$f[2]|$f[3]"} }, $f[5] }    # op keys target clients
	elsif ($kind eq 'lmd_load') { $load{ $f[0] } = [ @f[ 1 .. 4 ] ] }    # keys ms entries bytes
	elsif ($kind eq 'lmd_snap') { $snap{ $f[0] } = [ @f[ 1 .. 4 ] ] }    # keys snapshot-ms restore-ms bytes
}
close $in;
exit 0 unless %tps || %load;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub num { my ($v) = @_; return (defined $v && $v =~ /^[0-9.]+$/) ? $v : undef }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub ftps { my ($v) = @_; return defined $v ? sprintf('%.0f', $v) : 'ERR' }

# best OP KEYS TARGET CLIENTS: the best tps of a case over its rounds.
sub best
{
	my @v = sort { $b <=> $a } grep { defined } map { num($_) } @{ $tps{ join '|', @_ } // [] };
	return $v[0];
}

my $c = (split ' ', ($meta{lmd_clients} // '8'))[0];
say_ '';
say_ '### lmdb, a backend of another library (contrib/lmdb)';
say_ '';
say_ "Per statement: pgbench -M prepared, $c clients, random keys of a value state of $meta{lmd_keys} bigint keys"
  . ' (more than the rocksdb shared cache holds), or the hot keys of a reducing state; the best of'
  . ' the rounds. Same run, same server.';
say_ '';
say_ '| op | keys | lmdb tps | memory tps | rocksdb tps | lmdb / memory | lmdb / rocksdb | lmdb / SELECT 1 | lmdb / no-op |';
say_ '| --- | --- | --- | --- | --- | --- | --- | --- | --- |';
my $s1 = best('select1', '-', 'floor', $c);
my $fl = best('noop', '-', 'floor', $c);
my %x;
for my $oc ([qw(value_get random)], [qw(value_set random)], [qw(reduce hot)])
{
	my ($op, $keys) = @$oc;
	my ($l, $m, $r) = map { best($op, $keys, $_, $c) } qw(lmdb memory rocksdb);
	$x{"$op|memory"} = ratio($l, $m);
	$x{"$op|rocksdb"} = ratio($l, $r);
	say_ "| $op | $keys | "
	  . join(' | ', ftps($l), ftps($m), ftps($r), fx($x{"$op|memory"}), fx($x{"$op|rocksdb"}),
		fx(ratio($l, $s1)), fx(ratio($l, $fl)))
	  . ' |';
}
say_ '';
say_ 'Floors: SELECT 1 ' . ftps($s1) . ' tps, the no-op C function ' . ftps($fl) . ' tps.';
say_ '';
say_ '| target | measured | goal | met |';
say_ '| --- | --- | --- | --- |';
for my $t (
	[ 'value_get lmdb / memory', 'value_get|memory', 0.7 ],
	[ 'value_get lmdb / rocksdb', 'value_get|rocksdb', 2.0 ],
	[ 'value_set lmdb / rocksdb', 'value_set|rocksdb', 1.0 ])
{
	my ($label, $key, $goal) = @$t;
	my $v = $x{$key};
	say_ "| $label | " . fx($v) . " | >= ${goal}x | " . (defined $v ? ($v >= $goal ? 'yes' : 'no') : '-') . ' |';
}
if (%load || %snap)
{
	say_ '';
	say_ '| backend | keys | bulk load ms | bytes (state.states) | native snapshot ms | restore ms | snapshot bytes on disk |';
	say_ '| --- | --- | --- | --- | --- | --- | --- |';
	for my $b (qw(lmdb rocksdb memory))
	{
		my $l = $load{$b} // [];
		my $s = $snap{$b} // [];
		say_ "| $b | "
		  . join(' | ', $l->[0] // $s->[0] // '-', $l->[1] // '-', $l->[3] // '-', $s->[1] // '-', $s->[2] // '-', $s->[3] // '-')
		  . ' |';
	}
}

print $out;
open(my $md, '>>', $outfile) or die "report_lmdb.pl: $outfile: $!\n";
print $md $out;
close $md;
