#!/usr/bin/perl
# report_bigstate.pl RAW.tsv RESULTS.md: the bigstate figures of a run
# (lines "bs_*" written by bench/lib/bigstate.sh): per size and client count
# each target's tps and its ratio to the unlogged table, how reads change
# from the smallest size to the largest, bulk load, native snapshot against
# dd and restore.  Prints its tables on stdout and appends them to the
# results file.  The goal is reported, never asserted.
use strict;
use warnings;

die "usage: report_bigstate.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %tps, %load, %bytes, %snap, %skip, %script);
open(my $in, '<', $rawfile) or die "report_bigstate.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'bs_tps')
	{
		# op n target clients round tps ...; floors: start and end of a round
		my $key = "$f[0]|$f[1]|$f[2]|$f[3]";
		$key .= '|end' if $f[4] =~ /-end$/;
		push @{ $tps{$key} }, $f[5];
	}
	elsif ($kind eq 'bs_load') { $load{"$f[0]|$f[1]"}{ $f[2] } = $f[3] }      # n target kind ms
	elsif ($kind eq 'bs_bytes') { $bytes{"$f[0]|$f[1]"} = $f[2] }             # n target bytes
	elsif ($kind eq 'bs_snap') { $snap{"$f[0]|$f[1]"} = [ @f[ 2 .. 7 ] ] }    # n b: ms bytes dd-ms dd-bytes restore-ms entries
	elsif ($kind eq 'bs_skip') { $skip{"$f[0]|$f[1]"} = $f[2] }
	elsif ($kind eq 'bs_script') { $script{"$f[0]|$f[1]|$f[2]"} = $f[3] }    # op n target script
}
close $in;
exit 0 unless %tps || %load || %snap;

my @sizes = split ' ', ($meta{bs_sizes} // '');
my @clients = split ' ', ($meta{bs_clients} // '');
my @backends = grep { my $b = $_; grep { $_ eq $b } split ' ', ($meta{bs_backends} // '') } qw(memory lmdb rocksdb);
my @reads = qw(value_get map_get list_get);
my @writes = qw(value_set map_put list_add);

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub num { my ($v) = @_; return (defined $v && $v =~ /^[0-9.]+$/) ? $v : undef }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub fnum { my ($v, $fmt) = @_; return defined $v ? sprintf($fmt // '%.0f', $v) : '-' }
sub group
{
	my ($n) = @_;
	1 while $n =~ s/^(\d+)(\d{3})/$1,$2/;
	return $n;
}

# best KEY-PARTS: the best tps of a case over its rounds (undef: not run or failed).
sub best
{
	my $key = join '|', @_;
	return undef unless $tps{$key};
	my @v = sort { $b <=> $a } grep { defined } map { num($_) } @{ $tps{$key} };
	return $v[0];
}
sub ran { return exists $tps{ join '|', @_ } }
sub cell
{
	my @k = @_;
	return '-' unless ran(@k);
	my $v = best(@k);
	return defined $v ? sprintf('%.0f', $v) : 'ERR';
}

say_ '';
say_ '### Big state at speed (bigstate)';
say_ '';
say_ 'Per statement: pgbench -M prepared, random keys of every kind at each size (entries per kind:'
  . ' a value state of N bigint keys, a map state of N / 4 keys of 4 entries, a list state of N / 4 keys'
  . ' of 4 elements), beside an unlogged table doing the same (`table`: `(k bigint PRIMARY KEY, v bigint)`,'
  . ' `PRIMARY KEY (k, mk)`, and a row per list element with an index on k); the reads run at every client'
  . ' count before the writes. x: tps over the table\'s. The best of the rounds. Same run, same server.';
say_ '';
say_ "Settings: $meta{bs_settings}." if $meta{bs_settings};
say_ '';

my (@miss, $ncmp);
for my $n (@sizes)
{
	my @present = grep { !$skip{"$n|$_"} } @backends;
	say_ "#### " . group($n) . " entries per kind";
	say_ '';
	for my $b (@backends)
	{
		say_ "- $b: not measured at this size (its states do not fit `state_backend.memory_limit`)." if $skip{"$n|$b"};
	}
	say_ '' if grep { $skip{"$n|$_"} } @backends;
	say_ '| op | clients | ' . join(' | ', map { "$_ tps" } @present, 'table') . ' | ' . join(' | ', map { "$_ x" } @present) . ' |';
	say_ '| --- | ---: | ' . join(' | ', map { '---:' } @present, 'table', @present) . ' |';
	for my $op (@reads, @writes)
	{
		for my $c (@clients)
		{
			my $tb = best($op, $n, 'table', $c);
			my @r;
			for my $b (@present)
			{
				my $x = ratio(best($op, $n, $b, $c), $tb);
				push @r, fx($x);
				next unless defined $x;
				$ncmp++;
				push @miss, [ $b, $op, $n, $c, $x ] if $x < 1;
			}
			say_ "| $op | $c | " . join(' | ', (map { cell($op, $n, $_, $c) } @present, 'table'), @r) . ' |';
		}
	}
	say_ '';
	my @fl;
	for my $c (@clients)
	{
		push @fl, "$c client(s): SELECT 1 " . cell('select1', $n, 'floor', $c) . ' and ' . cell('select1', $n, 'floor', $c, 'end')
		  . ', no-op ' . cell('noop', $n, 'floor', $c) . ' and ' . cell('noop', $n, 'floor', $c, 'end');
	}
	say_ 'Floors (tps before the reads and after the writes): ' . join('; ', @fl) . '.' if @fl;
	say_ '';
}

if (@sizes)
{
	say_ "Goal: every backend at or above the table (1.00x) on random reads and writes at every size: "
	  . (@miss ? scalar(@miss) . " of " . ($ncmp // 0) . " comparisons below it" : ($ncmp ? "met in all $ncmp comparisons" : 'nothing measured')) . '.';
	if (@miss)
	{
		say_ '';
		say_ '| backend | op | entries per kind | clients | x table |';
		say_ '| --- | --- | ---: | ---: | ---: |';
		say_ "| $_->[0] | $_->[1] | " . group($_->[2]) . " | $_->[3] | " . fx($_->[4]) . ' |' for sort { $a->[4] <=> $b->[4] } @miss;
	}
	say_ '';
}

# Reads at the largest size over the smallest: the cliff, or its absence.
if (@sizes > 1)
{
	my ($s, $l) = ($sizes[0], $sizes[-1]);
	say_ '#### Reads at ' . group($l) . ' entries per kind over reads at ' . group($s);
	say_ '';
	say_ '| target | op | ' . join(' | ', map { "$_ client(s)" } @clients) . ' |';
	say_ '| --- | --- | ' . join(' | ', map { '---:' } @clients) . ' |';
	for my $t ((grep { $_ eq 'rocksdb' } @backends), (grep { $_ ne 'rocksdb' } @backends), 'table')
	{
		for my $op (@reads)
		{
			say_ "| $t | $op | " . join(' | ', map { fx(ratio(best($op, $l, $t, $_), best($op, $s, $t, $_))) } @clients) . ' |';
		}
	}
	say_ '';
}

if (%load)
{
	say_ '#### Bulk load';
	say_ '';
	say_ 'Each kind filled in statements of at most 1,000,000 entries (states: `value_set`, `map_put_all` and'
	  . ' `list_add_all` over `generate_series`; the table: `INSERT ... SELECT` into the empty table with its'
	  . ' indexes, VACUUM ANALYZE afterwards not counted), one target after the other; entries/s over the'
	  . ' three kinds (3 N entries). Bytes: `state.states.bytes`, or the tables\' `pg_total_relation_size`.';
	say_ '';
	say_ '| entries per kind | target | value ms | map ms | list ms | entries/s | bytes | bytes/entry |';
	say_ '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |';
	for my $n (@sizes)
	{
		for my $t (@backends, 'table')
		{
			my $l = $load{"$n|$t"} or next;
			my ($v, $m, $li) = map { num($l->{$_}) } qw(value map list);
			my $tot = (defined $v && defined $m && defined $li) ? $v + $m + $li : undef;
			my $by = num($bytes{"$n|$t"});
			say_ '| ' . group($n) . " | $t | " . join(' | ', fnum($v), fnum($m), fnum($li),
				fnum(defined $tot && $tot > 0 ? 3 * $n / ($tot / 1000) : undef),
				fnum($by), fnum(defined $by ? $by / (3 * $n) : undef, '%.1f')) . ' |';
		}
	}
	say_ '';
}

if (%snap)
{
	say_ '#### Native snapshot and restore';
	say_ '';
	say_ 'Each backend\'s three states loaded again with every other state dropped;'
	  . ' `state.wait_snapshot(state.snapshot(path))` timed from the call to its return, at full speed'
	  . ' (`state_backend.snapshot_cpu_percent = 100`; the default 50 rests half the time); bytes: `du -sb` of'
	  . ' the snapshot; dd: `dd if=/dev/zero bs=1M count=<the snapshot\'s MB, rounded up> conv=fsync`'
	  . ' into the same directory right after it (dd\'s own time, its fsync included); restore: the states dropped, `state.restore(path)`.'
	  . ' MB are 10^6 bytes.';
	say_ '';
	say_ '| entries per kind | backend | snapshot bytes | snapshot ms | snapshot MB/s | dd MB/s | snapshot / dd | restore ms | restore MB/s |';
	say_ '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
	for my $n (@sizes)
	{
		for my $b (@backends)
		{
			my $s = $snap{"$n|$b"} or next;
			my ($ms, $by, $ddms, $ddby, $rms) = map { num($_) } @$s;
			my $smbs = (defined $ms && $ms > 0) ? $by / 1e6 / ($ms / 1000) : undef;
			my $dmbs = (defined $ddms && $ddms > 0) ? $ddby / 1e6 / ($ddms / 1000) : undef;
			my $rmbs = (defined $rms && $rms > 0) ? $by / 1e6 / ($rms / 1000) : undef;
			say_ '| ' . group($n) . " | $b | " . join(' | ', fnum($by), fnum($ms), fnum($smbs, '%.1f'), fnum($dmbs, '%.1f'),
				fx(ratio($smbs, $dmbs)), fnum($rms), fnum($rmbs, '%.1f')) . ' |';
		}
	}
	say_ '';
}
# The scripts of the smallest size (the others differ only in their key ranges).
if (%script && @sizes)
{
	my $n = $sizes[0];
	say_ '#### pgbench scripts (at ' . group($n) . ' entries per kind)';
	say_ '';
	say_ '| op | target | script |';
	say_ '| --- | --- | --- |';
	for my $op ('select1', 'noop', @reads, @writes)
	{
		for my $t ('floor', @backends, 'table')
		{
			my $sc = $script{"$op|$n|$t"} // next;
			$sc =~ s/\s+$//;
			$sc =~ s/\|/\\|/g;
			say_ "| $op | $t | `$sc` |";
		}
	}
	say_ '';
}
my @secs = map { defined $meta{"bs_seconds_$_"} ? group($_) . ': ' . $meta{"bs_seconds_$_"} . ' s' : () } @sizes;
say_ 'Time per size: ' . join(', ', @secs) . '; the group: ' . ($meta{bs_seconds} // '-') . ' s.' if @secs;

print $out;
open(my $md, '>>', $outfile) or die "report_bigstate.pl: $outfile: $!\n";
print $md $out;
close $md;
