#!/usr/bin/perl
# report.pl RAW.tsv RESULTS.md: turn the raw figures of a benchmark run
# (written by bench/lib/bench.sh) into ratios, check the targets, print a
# table on stdout and write the results file.
#
# Every ratio compares figures of the same run.  Per-statement ratios are
# tps ratios (higher is better for the state); bulk ratios are time ratios
# (lower is better); memory ratios are bytes per entry (lower is better).
# A case that ran several times (rounds, repetitions) counts with its best
# run: other work on the machine only ever makes a run slower.
# Targets are reported, never asserted: a miss is written down with its
# size, and does not change the exit status.
use strict;
use warnings;

die "usage: report.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, @notes, %tps, %extra, %script, %bulk, %bulk_script);
my (%mem_area, %mem_state, %mem_table, %state_size, %table_size);
my (@runs, $failed);
my (%snap, %snap_size, %snap_dd, %snap_cmd, %snap_skip, %lat, $lat_script, %lat_cmd);
my (%rtps, %rscript, %rload, %rbulk, %rbulk_script, %rckpt, @rchange, %rckpt_cmd);

open(my $in, '<', $rawfile) or die "report.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'note') { push @notes, $f[0] }
	elsif ($kind eq 'script') { $script{"$f[0]|$f[1]|$f[2]"} = $f[3] }
	elsif ($kind eq 'tps')
	{
		my ($op, $keys, $target, $c, $tag, $tps, $lat, $txn, $nfail, $whole, $x) = @f;
		push @{ $tps{"$op|$keys|$target|$c"} }, $tps;
		$extra{"$op|$keys|$target|$c"} = $x if $x;
		push @runs, [@f];
	}
	elsif ($kind eq 'bulk_script') { $bulk_script{"$f[0]|$f[1]"} = $f[2] }
	elsif ($kind eq 'bulk') { push @{ $bulk{"$f[0]|$f[1]|$f[2]"} }, $f[4] }
	elsif ($kind eq 'mem_area') { $mem_area{ $f[0] } = [ @f[ 1 .. 3 ] ] }
	elsif ($kind eq 'mem_state') { $mem_state{ $f[0] } = [ @f[ 1 .. 2 ] ] }
	elsif ($kind eq 'mem_table') { $mem_table{ $f[0] } = [ @f[ 1 .. 4 ] ] }
	elsif ($kind eq 'state_size') { $state_size{ $f[0] } = [ @f[ 1 .. 2 ] ] }
	elsif ($kind eq 'table_size') { $table_size{ $f[0] } = $f[1] }
	elsif ($kind eq 'snap') { push @{ $snap{"$f[0]|$f[1]"} }, [ @f[ 2 .. 6 ] ] }	# seconds, bytes, entries, directory bytes, repetition
	elsif ($kind eq 'snap_size') { $snap_size{ $f[0] } = [ @f[ 1 .. 4 ] ] }
	elsif ($kind eq 'snap_dd') { $snap_dd{"$f[0]|$f[1]"} = [ @f[ 2 .. 3 ] ] }	# bytes, seconds
	elsif ($kind eq 'snap_cmd') { $snap_cmd{ $f[0] } = $f[1] }
	elsif ($kind eq 'snap_skip') { $snap_skip{ $f[0] } = $f[1] }
	elsif ($kind eq 'lat') { $lat{ $f[0] } = [ @f[ 1 .. $#f ] ] }
	elsif ($kind eq 'lat_script') { $lat_script = $f[0] }
	elsif ($kind eq 'lat_cmd') { $lat_cmd{ $f[0] =~ m{/lat/(\w+)} ? $1 : $f[0] } = $f[0] }
	elsif ($kind eq 'rdb_tps')
	{
		my ($op, $keys, $target, $c, $tag, $tps) = @f;
		push @{ $rtps{"$op|$keys|$target|$c"} }, $tps;
		push @runs, [ @f[ 0 .. 3 ], "rocksdb group $tag", @f[ 5 .. $#f ] ];
	}
	elsif ($kind eq 'rdb_script') { $rscript{"$f[0]|$f[1]|$f[2]"} = $f[3] }
	elsif ($kind eq 'rdb_load') { $rload{ $f[0] } = [ @f[ 1 .. 4 ] ] }	# keys, ms, entries, bytes
	elsif ($kind eq 'rdb_bulk') { push @{ $rbulk{"$f[0]|$f[1]"} }, $f[3] }
	elsif ($kind eq 'rdb_bulk_script') { $rbulk_script{ $f[0] } = $f[1] }
	# label: keys, seconds, worker seconds, bytes, entries, incremental, chk dir bytes, new shared bytes, new SST files, SST files
	elsif ($kind eq 'rdb_ckpt') { $rckpt{ $f[0] } = [ @f[ 1 .. 10 ] ] }
	elsif ($kind eq 'rdb_ckpt_change') { @rchange = @f[ 0 .. 1 ] }	# keys, ms
	elsif ($kind eq 'rdb_ckpt_cmd') { $rckpt_cmd{ $f[0] } = $f[1] }
	elsif ($kind eq 'failed') { $failed = $f[0] }
}
close $in;
$meta{$_} //= '?' for qw(date host kernel cpu memory os load_start load_end server pgbench
  extension library command mode seconds warmup keys hot mapkeys bulk_rows bulk_reps
  protocol runner server_conf);

my @backends = split ' ', ($meta{backends} // '');
my %heap = map { $_ => 1 } split ' ', ($meta{heap_backends} // '');
my @clients = split ' ', ($meta{clients} // '8 1');
my @ops = qw(value_get value_set reduce list_add map_put map_get);
my @keysets = qw(random hot);
my $keys_n = $meta{keys} // '?';

# ------------------------------------------------------------ helpers
sub num { my ($v) = @_; return (defined $v && $v =~ /^[0-9.]+$/) ? $v : undef }

# Best (highest) tps of a case's rounds, or undef.
sub tps_of
{
	my ($op, $keys, $target, $c) = @_;
	my @v = sort { $b <=> $a } grep { defined } map { num($_) } @{ $tps{"$op|$keys|$target|$c"} // [] };
	return $v[0];
}

sub failed_case { my $r = $tps{ join '|', @_ }; return $r && grep { $_ eq 'ERR' } @$r }

# Fastest (lowest) time of a bulk statement's repetitions, or undef.
sub fastest
{
	my @v = sort { $a <=> $b } grep { defined } map { num($_) } @_;
	return $v[0];
}

sub min { my ($a, $b) = @_; return $a < $b ? $a : $b }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub ftps { my ($v) = @_; return defined $v ? sprintf('%.0f', $v) : '-' }
sub fms { my ($v) = @_; return defined $v ? sprintf('%.0f', $v) : '-' }
sub fbytes { my ($v) = @_; return defined $v ? sprintf('%.1f', $v) : '-' }

sub cell
{
	my ($v, $fmt, @case) = @_;
	return 'ERR' if !defined $v && @case && failed_case(@case);
	return $fmt->($v);
}

# ------------------------------------------------------------ figures
my %floor = map { $_ => tps_of('noop', '-', 'floor', $_) } @clients;
my %select1 = map { $_ => tps_of('select1', '-', 'floor', $_) } @clients;

# Per-statement rows: [op, keys, clients, {backend => [tps, xnoop, xunl, xlog]}, unl, log]
my @rows;
for my $c (@clients)
{
	for my $op (@ops)
	{
		for my $keys (@keysets)
		{
			next unless grep { exists $tps{"$op|$keys|$_|$c"} } (@backends, 'unlogged', 'logged');
			my $unl = tps_of($op, $keys, 'unlogged', $c);
			my $log = tps_of($op, $keys, 'logged', $c);
			my %b;
			for my $be (@backends)
			{
				my $t = tps_of($op, $keys, $be, $c);
				$b{$be} = [ $t, ratio($t, $floor{$c}), ratio($t, $unl), ratio($t, $log) ];
			}
			push @rows, [ $op, $keys, $c, \%b, $unl, $log ];
		}
	}
}

# Bulk: fastest ms per op, target, variant.
my @bulk_rows;
for my $op (%bulk ? qw(value_set reduce) : ())
{
	for my $variant (qw(new existing))
	{
		my %ms = map { $_ => fastest(@{ $bulk{"$op|$_|$variant"} // [] }) } (@backends, 'unlogged', 'logged');
		push @bulk_rows, [ $op, $variant, \%ms ];
	}
}

# Memory: bytes per entry.
my ($unl_rows, $unl_main, $unl_table, $unl_index) = @{ $mem_table{unlogged} // [] };
my $unl_bpe = ($unl_rows && defined $unl_table) ? ($unl_table + $unl_index) / $unl_rows : undef;
my @mem_rows;				# [label, entries, bytes, bytes/entry]
for my $be (@backends)
{
	if (my $a = $mem_area{$be})
	{
		my ($n, $rss, $size) = @$a;
		push @mem_rows, [ "$be: shared memory pages touched while loading", $n, $rss, $n ? $rss / $n : undef, 'touched', $be ];
		push @mem_rows, [ "$be: shared memory segments added by the load", $n, $size, $n ? $size / $n : undef, 'reserved', $be ];
	}
	if (my $s = $mem_state{$be})
	{
		my ($n, $bytes) = @$s;
		push @mem_rows, [ "$be: entry bytes counted by state.states", $n, $bytes, $n ? $bytes / $n : undef, 'counted', $be ];
	}
}
for my $t (qw(unlogged logged))
{
	my ($n, $main, $table, $index) = @{ $mem_table{$t} // [] };
	next unless $n;
	push @mem_rows, [ "$t table (k text PRIMARY KEY, v bigint): heap", $n, $table, $table / $n, 'table', $t ];
	push @mem_rows, [ "$t table: primary key index", $n, $index, $index / $n, 'index', $t ];
	push @mem_rows, [ "$t table: heap and index", $n, $table + $index, ($table + $index) / $n, 'total', $t ];
}

# ------------------------------------------------------------ targets
# Each check: [target, case, measured, bound, kind ('>=' or '<='), unit]
my @checks;
for my $r (@rows)
{
	my ($op, $keys, $c, $b, $unl, $log) = @$r;
	for my $be (grep { $heap{$_} } @backends)
	{
		my ($t, $xnoop, $xunl, $xlog) = @{ $b->{$be} };
		my $case = "$be $op, $keys keys, $c client" . ($c == 1 ? '' : 's');
		my $fl = $floor{$c};
		push @checks, [ 'heap op >= 0.9x no-op floor', $case, $xnoop, 0.9, '>=',
			defined $t && $fl ? sprintf('%.1f us per statement more than the no-op (1e6/tps)', over($t, $fl)) : '' ];
		push @checks, [ 'heap op >= 1.6x unlogged table', $case, $xunl, 1.6, '>=', vs_table($t, $unl, $fl, 1.6) ];
		if ($op eq 'reduce' && $keys eq 'hot')
		{
			push @checks, [ 'hot reduce >= 2x unlogged UPDATE', $case, $xunl, 2, '>=', vs_table($t, $unl, $fl, 2) ];
			push @checks, [ 'hot reduce >= 6x logged UPDATE', $case, $xlog, 6, '>=', vs_table($t, $log, $fl, 6) ];
		}
	}
}
for my $br (@bulk_rows)
{
	my ($op, $variant, $ms) = @$br;
	next unless $op eq 'value_set';
	for my $be (grep { $heap{$_} } @backends)
	{
		my $rows = num($meta{bulk_rows});
		push @checks, [ 'bulk value_set <= 0.2x unlogged upsert time',
			"$be, $meta{bulk_rows} rows, $variant keys", ratio($ms->{$be}, $ms->{unlogged}), 0.2, '<=',
			(defined $ms->{$be} && defined $ms->{unlogged} && $rows)
			? sprintf('%.2f us per row; the table %.2f us', 1000 * $ms->{$be} / $rows, 1000 * $ms->{unlogged} / $rows) : '' ];
	}
}
# The memory target is checked on the pages touched (what the entries really
# occupy); the entries' own bytes leave out the hash table and the
# allocator, so they stand in only when no pages were measured.
my $touched = grep { $_->[4] eq 'touched' && $heap{ $_->[5] } } @mem_rows;
for my $m (@mem_rows)
{
	my ($label, $n, $bytes, $bpe, $what, $be) = @$m;
	next unless $heap{$be} && $what eq ($touched ? 'touched' : 'counted');
	push @checks, [ 'heap bytes/entry <= 0.6x unlogged table',
		$what eq 'touched' ? "$be, pages touched" : "$be, entry bytes only (state.states)",
		ratio($bpe, $unl_bpe), 0.6, '<=',
		defined $unl_bpe ? sprintf('%.1f bytes per entry; the table %.1f', $bpe, $unl_bpe) : '' ];
}

# Snapshots: seconds, bytes and entries of each step, per size.
my @snap_sizes = do { my %n = map { (split /\|/)[0] => 1 } keys %snap; sort { $a <=> $b } keys %n };
# snap_fig N STEP I: field I of the step's fastest repetition.
sub snap_fig
{
	my ($n, $step, $i) = @_;
	my @r = sort { $a->[0] <=> $b->[0] } grep { defined num($_->[0]) } @{ $snap{"$n|$step"} // [] };
	return @r ? num($r[0][$i]) : undef;
}
sub snap_sec { return snap_fig(@_, 0) }
sub mbps { my ($bytes, $s) = @_; return (defined $bytes && $s) ? $bytes / $s / 1e6 : undef }
sub dd_mbps { my ($n, $mode) = @_; my $r = $snap_dd{"$n|$mode"}; return $r ? mbps(num($r->[0]), num($r->[1])) : undef }
# [step, label, base of the ratio, whether it writes]
my @snap_steps = (
	[ 'copy_to', 'COPY TO binary (into the page cache, no fsync)', 'copy_to', 1 ],
	[ 'copy_to_fsync', 'COPY TO binary, then fsync of the file', 'copy_to', 1 ],
	[ 'snapshot_native', 'snapshot, native: snapshot() to wait_snapshot() returning', 'copy_to', 1 ],
	[ 'snapshot_native_worker', 'snapshot, native: the worker (finished_at - started_at)', 'copy_to', 1 ],
	[ 'snapshot_canonical', 'snapshot, canonical: snapshot() to wait_snapshot() returning', 'copy_to', 1 ],
	[ 'snapshot_canonical_worker', 'snapshot, canonical: the worker (finished_at - started_at)', 'copy_to', 1 ],
	[ 'copy_from', 'COPY FROM binary, into an empty table with its primary key', 'copy_from', 0 ],
	[ 'restore_native', 'state.restore() of the native snapshot', 'copy_from', 0 ],
	[ 'restore_canonical', 'state.restore() of the canonical snapshot', 'copy_from', 0 ],
);
my @snap_head = ('entries', 'step', 'seconds', 'MB', 'MB/s', 'entries/s', 'x COPY', 'x COPY TO + fsync');
my @snap_body;
for my $n (@snap_sizes)
{
	for my $st (@snap_steps)
	{
		my ($step, $label, $base, $writes) = @$st;
		next unless $snap{"$n|$step"};
		my ($sec, $bytes) = (snap_sec($n, $step), snap_fig($n, $step, 1));
		push @snap_body, [ $n, $label, defined $sec ? sprintf('%.3f', $sec) : '-',
			defined $bytes ? sprintf('%.1f', $bytes / 1e6) : '-', fms(mbps($bytes, $sec)),
			fms($sec ? $n / $sec : undef), fx(ratio($sec, snap_sec($n, $base))),
			$step =~ /^snapshot/ ? fx(ratio($sec, snap_sec($n, 'copy_to_fsync'))) : '' ];
	}
	for my $mode (qw(fsync nofsync))
	{
		my $r = $snap_dd{"$n|$mode"} or next;
		push @snap_body, [ $n, $mode eq 'fsync' ? 'dd bs=1M conv=fsync (the disk, durable)' : 'dd bs=1M without fsync (the page cache)',
			sprintf('%.3f', $r->[1]), sprintf('%.1f', $r->[0] / 1e6), fms(mbps(@$r)), '', '', '' ];
	}
}
my @snap_size_head = ('entries', 'state bytes (state.states)', 'table heap', 'table index', 'COPY file', 'native snapshot', 'canonical snapshot');
my @snap_size_body = map {
	my $n = $_;
	[ $n, @{ $snap_size{$n} }[ 1 .. 3 ], map { snap_fig($n, $_, 1) // '-' } qw(copy_to snapshot_native snapshot_canonical) ]
} grep { $snap_size{$_} } @snap_sizes;

# The snapshot target: 1M entries if measured, else the smallest size.
if (@snap_sizes)
{
	my $tn = (grep { $_ == 1000000 } @snap_sizes) ? 1000000 : $snap_sizes[0];
	my $copy = snap_sec($tn, 'copy_to');
	for my $fmt (qw(native canonical))
	{
		my $sec = snap_sec($tn, "snapshot_$fmt");
		my $w = snap_sec($tn, "snapshot_${fmt}_worker");
		push @checks, [ 'snapshot of 1M entries <= 1.5x COPY TO binary', "$fmt, $tn entries, snapshot() to wait_snapshot()",
			ratio($sec, $copy), 1.5, '<=',
			(defined $sec && defined $copy)
			? sprintf('%.3f s against %.3f s; the worker alone %.2fx; against COPY TO and an fsync of its file %.2fx',
				$sec, $copy, ratio($w, $copy) // 0, ratio($sec, snap_sec($tn, 'copy_to_fsync')) // 0) : '' ];
	}
}

# rocksdb: its own floors and heap cases, in the rocksdb group.
my $rheap = ($meta{rdb_heap} // 'none') eq 'none' ? undef : $meta{rdb_heap};
my @rclients = split ' ', ($meta{rdb_clients} // '8');
sub rtps_of
{
	my ($op, $keys, $target, $c) = @_;
	my @v = sort { $b <=> $a } grep { defined } map { num($_) } @{ $rtps{"$op|$keys|$target|$c"} // [] };
	return $v[0];
}
sub rfailed { my $r = $rtps{ join '|', @_ }; return $r && grep { $_ eq 'ERR' } @$r }
my (@r_floor_body, @r_ps_body, @r_bulk_body, @r_ckpt_body);
my @r_floor_head = ('statement', 'clients', 'runs (start and end of each round)', 'best (used)', 'spread');
my $hl = $rheap // 'heap';
my @r_ps_head = ('op', 'keys', 'clients', 'rocksdb tps', "$hl tps", 'rocksdb / SELECT 1', 'rocksdb / noop',
	"rocksdb / $hl", "$hl / SELECT 1", 'rocksdb us/stmt', "$hl us/stmt");
for my $c (@rclients)
{
	next unless grep { /\|$c$/ } keys %rtps;
	for my $op (qw(select1 noop))
	{
		my @v = @{ $rtps{"$op|-|floor|$c"} // [] };
		my @n = grep { defined } map { num($_) } @v;
		my ($lo, $hi) = (sort { $a <=> $b } @n)[ 0, -1 ];
		push @r_floor_body, [ $op eq 'noop' ? 'SELECT bench.noop($1, $2)' : 'SELECT 1', $c,
			join(' / ', map { defined num($_) ? sprintf('%.0f', $_) : $_ } @v),
			ftps(rtps_of($op, '-', 'floor', $c)), (@n > 1 && $hi > 0) ? sprintf('%.0f%%', 100 * ($hi - $lo) / $hi) : '-' ];
	}
	my $s1 = rtps_of('select1', '-', 'floor', $c);
	my $fl = rtps_of('noop', '-', 'floor', $c);
	for my $oc ([qw(value_get random)], [qw(value_get hot)], [qw(value_set random)], [qw(reduce hot)])
	{
		my ($op, $keys) = @$oc;
		next unless exists $rtps{"$op|$keys|rocksdb|$c"};
		my $r = rtps_of($op, $keys, 'rocksdb', $c);
		my $h = $rheap ? rtps_of($op, $keys, $rheap, $c) : undef;
		push @r_ps_body, [ $op, $keys, $c,
			(defined $r || !rfailed($op, $keys, 'rocksdb', $c)) ? ftps($r) : 'ERR',
			(defined $h || !$rheap || !rfailed($op, $keys, $rheap, $c)) ? ftps($h) : 'ERR',
			fx(ratio($r, $s1)), fx(ratio($r, $fl)), fx(ratio($r, $h)), fx(ratio($h, $s1)),
			defined $r && $r > 0 ? sprintf('%.1f', 1e6 / $r) : '-', defined $h && $h > 0 ? sprintf('%.1f', 1e6 / $h) : '-' ];
	}
}
my @r_bulk_head = ('statement', 'keys', 'rocksdb ms', "$hl ms", 'unlogged ms', "rocksdb / $hl", 'rocksdb / unlogged',
	"$hl / unlogged", 'rocksdb us/row');
for my $variant (%rbulk ? qw(new existing) : ())
{
	my %ms = map { $_ => fastest(@{ $rbulk{"$_|$variant"} // [] }) } ('rocksdb', $hl, 'unlogged');
	my $rows = num($meta{bulk_rows});
	push @r_bulk_body, [ 'value_set / upsert', $variant, (map { fms($ms{$_}) } ('rocksdb', $hl, 'unlogged')),
		fx(ratio($ms{rocksdb}, $ms{$hl})), fx(ratio($ms{rocksdb}, $ms{unlogged})), fx(ratio($ms{$hl}, $ms{unlogged})),
		(defined $ms{rocksdb} && $rows) ? sprintf('%.2f', 1000 * $ms{rocksdb} / $rows) : '-' ];
}
sub fpct { my ($r) = @_; return defined $r ? sprintf('%.1f%%', 100 * $r) : '-' }
# fcheck TARGET VALUE: a target's figure, as a percentage when the target is one.
sub fcheck { my ($t, $v) = @_; return $t =~ /%/ ? fpct($v) : fx($v) }
my @r_ckpt_head = ('checkpoint', 'keys', 'bytes (state.snapshots)', 'incremental', 'of the full', 'seconds', 'worker seconds',
	'chk dir bytes', 'new shared SST bytes', 'SST files new / referenced');
my $rfull = $rckpt{full} ? num($rckpt{full}[3]) : undef;
for my $label (grep { $rckpt{$_} } qw(full incremental))
{
	my ($n, $sec, $wsec, $bytes, $entries, $incr, $dirb, $newb, $newf, $sstf) = @{ $rckpt{$label} };
	push @r_ckpt_body, [ $label eq 'full' ? 'first (full)' : 'second, after 1% changed', $n, $bytes,
		$incr eq 't' ? 'yes' : $incr eq 'f' ? 'no' : $incr, fpct(ratio(num($bytes), $rfull)), sprintf('%.3f', $sec), sprintf('%.3f', $wsec),
		$dirb, $newb, "$newf / $sstf" ];
}
if ($rckpt{full} || $rckpt{incremental})
{
	my $inc = $rckpt{incremental};
	my $r = $inc ? ratio(num($inc->[3]), $rfull) : undef;
	push @checks, [ 'rocksdb incremental checkpoint <= 10% of the full one (1% of keys changed)',
		($inc ? $inc->[0] : $rckpt{full}[0]) . ' keys, bytes of state.snapshots', $r, 0.10, '<=',
		$inc ? sprintf('%s of the bytes: %s against %s; %s SST files of %s new (%s bytes), the rest in chk-<id> (%s bytes)',
			fpct($r), $inc->[3], $rfull // '-', $inc->[8], $inc->[9], $inc->[7], $inc->[6]) : 'the second checkpoint did not complete' ];
}

# Writers' latency: idle and during snapshots.
my @lat_head = ('run', 'snapshots taken', 'transactions', 'tps', 'p50 us', 'p99 us', 'p99.9 us', 'max us', 'mean us');
my @lat_body;
for my $run (qw(idle snapshots))
{
	my $l = $lat{$run} or next;
	my $label = $run eq 'idle' ? 'no snapshot running' : 'snapshots back to back';
	if ($l->[0] eq 'ERR') { push @lat_body, [ $label, ('ERR') x 8 ]; next }
	my ($n, $p50, $p99, $p999, $max, $mean, $secs, $nfail, $whole, $count) = @$l;
	push @lat_body, [ $label, $run eq 'idle' ? '-' : $count, $n, ftps($secs ? $n / $secs : undef), $p50, $p99, $p999, $max, $mean ];
}
my ($lat_p99_ratio, $lat_tps_ratio);
if ($lat{idle} && $lat{snapshots} && $lat{idle}[0] ne 'ERR' && $lat{snapshots}[0] ne 'ERR')
{
	$lat_p99_ratio = ratio($lat{snapshots}[2], $lat{idle}[2]);
	$lat_tps_ratio = ratio($lat{snapshots}[0], $lat{idle}[0]);
}

# over(tps, floor_tps): microseconds per statement a case spends over the floor.
sub over { my ($t, $fl) = @_; return 1e6 / $t - 1e6 / $fl }

# vs_table: why a state case stands where it does against a table case.  The
# statement's own cost (the floor) is paid by both, so a ratio above
# floor / table is out of reach even for an operation that costs nothing.
sub vs_table
{
	my ($t, $tbl, $fl, $bound) = @_;
	return '' unless defined $t && defined $tbl && $fl;
	my $ceiling = $fl / $tbl;
	return 'this case ran faster than the no-op floor did (noise between runs)' if $t > $fl;
	my $s = sprintf('over the no-op: state %.1f us, table %.1f us per statement', over($t, $fl), over($tbl, $fl));
	$s .= sprintf('; a free operation would reach only %.2fx', $ceiling) if $ceiling < $bound;
	return $s;
}

sub check_status
{
	my ($ch) = @_;
	my ($t, $case, $v, $bound, $kind) = @$ch;
	return ('not measured', undef) unless defined $v;
	my $ok = $kind eq '>=' ? $v >= $bound : $v <= $bound;
	return ('met', undef) if $ok;
	my $pct = 100 * abs($v / $bound - 1);
	my $by = ($pct < 1 ? '<1%' : sprintf('%.0f%%', $pct)) . ($kind eq '>=' ? ' short' : ' over');
	return ('MISSED', $by);
}

my (@target_lines, @misses, %tsum, @torder);
for my $ch (@checks)
{
	my ($t) = @$ch;
	push @torder, $t unless $tsum{$t};
	$tsum{$t} //= { n => 0, met => 0, worst => undef };
	my ($st, $by) = check_status($ch);
	my $s = $tsum{$t};
	$s->{n}++;
	$s->{met}++ if $st eq 'met';
	$s->{unmeasured}++ if $st eq 'not measured';
	push @misses, [ @$ch[ 0 .. 4 ], $by, $ch->[5] ] if $st eq 'MISSED';
	if (defined $ch->[2])
	{
		my $w = $s->{worst};
		$s->{worst} = $ch
		  if !$w || ($ch->[4] eq '>=' ? $ch->[2] < $w->[2] : $ch->[2] > $w->[2]);
	}
}

# ------------------------------------------------------------ console
my $out = '';
sub say_ { $out .= join('', @_) . "\n" }

sub text_table
{
	my ($head, @body) = @_;
	my @w = map { length } @$head;
	for my $r (@body) { for my $i (0 .. $#$r) { $w[$i] = length $r->[$i] if length $r->[$i] > ($w[$i] // 0) } }
	my $fmt = join('  ', map { $_ == 0 ? "%-$w[$_]s" : "%$w[$_]s" } 0 .. $#w);
	my $s = sprintf("$fmt\n", @$head);
	$s .= sprintf("$fmt\n", @$_) for @body;
	return $s;
}

# md_table: a Markdown table; columns whose cells are all figures align right.
sub md_table
{
	my ($head, @body) = @_;
	my @right = map {
		my $i = $_;
		!grep { $_->[$i] !~ /^(?:[-+0-9.,]+x?|ERR|-|)$/ } @body
	} 0 .. $#$head;
	my $s = '| ' . join(' | ', @$head) . " |\n";
	$s .= '| ' . join(' | ', map { $right[$_] ? '---:' : '---' } 0 .. $#$head) . " |\n";
	$s .= '| ' . join(' | ', @$_) . " |\n" for @body;
	return $s;
}

# Per-statement table, as rows of strings.
my @ps_head = ('op', 'keys', 'clients');
for my $be (@backends) { push @ps_head, "$be tps", 'x noop', 'x unlogged', 'x logged' }
push @ps_head, 'unlogged tps', 'logged tps';
my @ps_body;
for my $r (@rows)
{
	my ($op, $keys, $c, $b, $unl, $log) = @$r;
	my @line = ($op, $keys, $c);
	for my $be (@backends)
	{
		my ($t, $x1, $x2, $x3) = @{ $b->{$be} };
		push @line, cell($t, \&ftps, $op, $keys, $be, $c), fx($x1), fx($x2), fx($x3);
	}
	push @line, cell($unl, \&ftps, $op, $keys, 'unlogged', $c), cell($log, \&ftps, $op, $keys, 'logged', $c);
	push @ps_body, \@line;
}
my $rounds = $meta{rounds} // 1;
my @floor_head = ('statement', 'clients', 'runs (start and end of each round)', 'best (used)', 'spread');
my @floor_body;
my @drift;					# how far the no-op floor moved within the run
for my $c (@clients)
{
	for my $op (qw(select1 noop))
	{
		my @v = @{ $tps{"$op|-|floor|$c"} // [] };
		my @n = grep { defined } map { num($_) } @v;
		my ($lo, $hi) = (sort { $a <=> $b } @n)[ 0, -1 ];
		my $spread = (@n > 1 && $hi > 0) ? sprintf('%.0f%%', 100 * ($hi - $lo) / $hi) : '-';
		push @drift, "$spread with $c client" . ($c == 1 ? '' : 's') if $op eq 'noop';
		push @floor_body, [ $op eq 'noop' ? 'SELECT bench.noop($1, $2)' : 'SELECT 1', $c,
			join(' / ', map { defined num($_) ? sprintf('%.0f', $_) : $_ } @v),
			ftps(tps_of($op, '-', 'floor', $c)), $spread ];
	}
}
my @bulk_head = ('statement', 'keys');
push @bulk_head, "$_ ms" for (@backends, 'unlogged', 'logged');
push @bulk_head, "$_ / unlogged" for @backends;
push @bulk_head, "$_ / logged" for @backends;
my @bulk_body;
for my $br (@bulk_rows)
{
	my ($op, $variant, $ms) = @$br;
	push @bulk_body, [ $op eq 'value_set' ? 'value_set / upsert' : 'reduce / upsert v = v + x', $variant,
		(map { fms($ms->{$_}) } (@backends, 'unlogged', 'logged')),
		(map { fx(ratio($ms->{$_}, $ms->{unlogged})) } @backends),
		(map { fx(ratio($ms->{$_}, $ms->{logged})) } @backends) ];
}
my @mem_head = ('what', 'entries', 'bytes', 'bytes/entry', 'x unlogged table');
my @mem_body = map { [ $_->[0], $_->[1], $_->[2], fbytes($_->[3]), fx(ratio($_->[3], $unl_bpe)) ] } @mem_rows;
my @tgt_head = ('target', 'met', 'worst case', 'worst');
my @tgt_body;
for my $t (@torder)
{
	my $s = $tsum{$t};
	my $w = $s->{worst};
	push @tgt_body, [ $t, "$s->{met} of $s->{n}", $w ? $w->[1] : '-', $w ? fcheck($t, $w->[2]) : '-' ];
}

say_ "";
say_ "state_backend benchmark ($meta{mode}): $meta{date}, $meta{host}";
if (@rows)
{
	say_ "pgbench -M $meta{protocol}: per case "
	  . ($meta{smoke_transactions} ? "the tps of a run of $meta{smoke_transactions} transactions per client"
		: "the median tps of $meta{seconds} s after a warm-up ($meta{warmup})")
	  . ($rounds > 1 ? ", best of $rounds rounds" : '') . "; $keys_n keys, hot = $meta{hot} keys";
	say_ "";
	say_ "Floor (tps; spread = how much it moved during the run, a measure of the noise)";
	$out .= text_table(\@floor_head, @floor_body);
	say_ "";
	say_ "Per statement (tps; ratios are tps against the same run's no-op floor and table cases)";
	$out .= text_table(\@ps_head, @ps_body);
	say_ "";
}
if (@bulk_body)
{
	say_ "Bulk, one statement of $meta{bulk_rows} rows (best ms of $meta{bulk_reps}; ratios: time, lower is better)";
	$out .= text_table(\@bulk_head, @bulk_body);
	say_ "";
}
if (@mem_body)
{
	say_ "Memory, $keys_n (text key, bigint) entries";
	$out .= text_table(\@mem_head, @mem_body);
	say_ "";
}
if (@snap_body)
{
	say_ "Snapshot and restore ($meta{snap_backend} state) against COPY binary of an unlogged table (x COPY: time against COPY TO for writes, COPY FROM for reads)";
	$out .= text_table(\@snap_head, @snap_body);
	say_ "";
}
if (@lat_body)
{
	say_ "Writers during snapshots: $meta{lat_clients} clients of value_set on random keys of $meta{lat_keys}, $meta{lat_seconds} s each"
	  . (defined $lat_p99_ratio ? sprintf('; p99 with / without snapshots %s, tps %s', fx($lat_p99_ratio), fx($lat_tps_ratio)) : '');
	$out .= text_table(\@lat_head, @lat_body);
	say_ "";
}
if (@r_ps_body || @r_bulk_body || @r_ckpt_body)
{
	say_ "RocksDB (the rocksdb group: its own floors and $hl cases, in this run; $keys_n keys)";
	if (@r_ps_body)
	{
		$out .= text_table(\@r_floor_head, @r_floor_body);
		$out .= text_table(\@r_ps_head, @r_ps_body);
	}
	if (@r_bulk_body)
	{
		say_ "Bulk value_set, one statement of $meta{bulk_rows} rows (best ms of $meta{bulk_reps}; time ratios, lower is better)";
		$out .= text_table(\@r_bulk_head, @r_bulk_body);
	}
	if (@r_ckpt_body)
	{
		say_ "Checkpoints of a rocksdb state (snapshot() under state_backend.checkpoint_dir, then wait_snapshot())"
		  . (@rchange ? sprintf('; changing %s keys took %.0f ms', @rchange) : '');
		my $rr = $rckpt{incremental} ? ratio(num($rckpt{incremental}[3]), $rfull) : undef;
		$out .= text_table(\@r_ckpt_head, @r_ckpt_body);
		say_ sprintf('incremental / full: %s of the bytes (target <= 10%%), %s of the time',
			fpct($rr), fx(ratio(num($rckpt{incremental}[1]), num($rckpt{full}[1])))) if defined $rr;
	}
	say_ "";
}
say_ "Targets (reported, not asserted)";
$out .= text_table(\@tgt_head, @tgt_body);
say_ sprintf("%d target check(s) missed; see the results file for each", scalar @misses) if @misses;
say_ "note: $_" for @notes;
say_ "FAILED cases: $failed" if $failed;
print $out;

# ------------------------------------------------------------ results file
my $md = '';
sub md { $md .= join('', @_) . "\n" }

md "# state_backend benchmark: $meta{date}, $meta{host}";
md "";
md "Written by `bench/$meta{mode}`. Every ratio compares figures measured in this same run.";
md "";
md "## Run";
md "";
md "- Command: `$meta{command}`";
md "- Machine: $meta{cpu}, $meta{memory} RAM; $meta{os}; $meta{kernel}";
md "- Load average (1, 5, 15 min): $meta{load_start} at the start, $meta{load_end} at the end"
  . " (other work on the machine shares its CPUs; ratios are safer than absolute figures)";
md "- Server: $meta{server}";
md "- Client: $meta{pgbench}";
md "- Extension: $meta{extension}; $meta{library}" . ($meta{commit} ? "; source commit $meta{commit}" : '');
md "- Server settings (everything else default; a fresh `initdb`, run as `$meta{runner}`): `$meta{server_conf}`";
md "- Backends measured: " . (join(', ', @backends) || 'none')
  . "; heap backends (targets apply): " . (join(', ', grep { $heap{$_} } @backends) || 'none')
  . (%rtps || %rbulk || %rckpt ? "; rocksdb in its own group, beside " . ($rheap // 'no heap backend') : '');
md "- Cases: " . ($meta{cases} // 'statement bulk snapshot') . " (`BENCH_CASES`)";
if (@rows)
{
	md "- Per statement: " . ($meta{smoke_transactions}
		? "`pgbench -n -M $meta{protocol} -t $meta{smoke_transactions}`, $rounds round(s), each running every case once."
		  . " A case's figure is the tps of the whole run (a smoke run's: not a measurement);"
		: "`pgbench -n -M $meta{protocol} -P 1`, $rounds round(s), each running every case once."
		  . " A case's figure is the median of the per-second tps over $meta{seconds} s after a warm-up ($meta{warmup}:"
		  . " every run starts new server processes, which first fault in the shared memory they touch, one page at a time);")
	  . " with several rounds, its best round. "
	  . join(' and ', map { $_ == 1 ? '`-c 1 -j 1`' : "`-c $_ -j " . ($_ < 2 ? $_ : 2) . '`' } @clients)
	  . "; tps without connection time. Keys are the text `'1'` to `'$keys_n'`, all preloaded in every state and table;"
	  . " *random* draws a key uniformly from all of them, *hot* from the first $meta{hot}."
	  . " Maps hold map keys `'1'` to `'$meta{mapkeys}'` under every key, and `map_put`/`map_get` draw one of them.";
	md "- Floor: a no-op C function (`bench/noop.c`) called with the same two parameters as `value_set`,"
	  . " run at the start and the end of each client count in every round; ratios use its best run. It moved by "
	  . join(', ', @drift) . " between those runs: differences of that order between cases are noise.";
	md "- A table that an earlier case wrote is vacuumed (untimed) before the next case on it. Hot-key lists are reset to one"
	  . " element before each hot `list_add` case, in the state and in the table alike.";
}
{
	my @t;
	push @t, "loading $meta{load_seconds} s" if defined $meta{load_seconds};
	push @t, "per-statement cases $meta{statement_seconds} s" if defined $meta{statement_seconds};
	push @t, "bulk statements $meta{bulk_seconds} s" if defined $meta{bulk_seconds};
	push @t, "rocksdb loading and per-statement cases $meta{rdb_statement_seconds} s" if defined $meta{rdb_statement_seconds};
	push @t, "rocksdb bulk $meta{rdb_bulk_seconds} s" if defined $meta{rdb_bulk_seconds};
	push @t, "rocksdb checkpoints $meta{rdb_ckpt_seconds} s" if defined $meta{rdb_ckpt_seconds};
	push @t, "snapshot cases $meta{snap_seconds} s" if defined $meta{snap_seconds};
	md "- Time: " . join(', ', @t) . "." if @t;
}
md "";
md "## Targets";
md "";
md "Reported, not asserted.";
md "";
md md_table(\@tgt_head, @tgt_body);
if (@misses)
{
	md "Missed (measured against the bound):";
	md "";
	md md_table([ 'target', 'case', 'measured', 'bound', 'by how much', 'where the time or space goes' ],
		map { [ $_->[0], $_->[1], fcheck($_->[0], $_->[2]), "$_->[4] " . fcheck($_->[0], $_->[3]), $_->[5], $_->[6] // '' ] } @misses);
}
elsif (!@checks)
{
	md "No case of a target ran.";
	md "";
}
else
{
	md "Every target was met.";
	md "";
}
if (@rows)
{
	md "## Floor (tps)";
	md "";
	md md_table(\@floor_head, @floor_body);
	md "## Per statement";
	md "";
	md "tps of each case; `x noop` is the ratio to the floor, `x unlogged` and `x logged` to the same operation on the tables.";
	md "";
	md md_table(\@ps_head, @ps_body);
	if (%extra)
	{
		md "Hot-key list lengths at the end of each `list_add` case (they start at 1):";
		md "";
		for my $k (sort keys %extra)
		{
			my ($op, $keys, $target, $c) = split /\|/, $k;
			(my $n = $extra{$k}) =~ s/^\D*//;
			md "- $target, $c client" . ($c == 1 ? '' : 's') . ": $n elements";
		}
		md "";
	}
}
if (@bulk_body)
{
	md "## Bulk";
	md "";
	md "One statement of $meta{bulk_rows} rows; best ms of $meta{bulk_reps} repetition(s). *new*: into an empty state or table;"
	  . " *existing*: the same keys again. Ratios are time ratios (lower is better for the state).";
	md "";
	md md_table(\@bulk_head, @bulk_body);
}
if (@mem_body)
{
	md "## Memory";
	md "";
	md "$keys_n entries with text keys `'1'` to `'$keys_n'` and bigint values. For the first heap backend, loaded by one session"
	  . " into an empty shared area: the pages of shared memory that session touched while loading (what the entries occupy,"
	  . " with the hash table slots and allocator rounding), and the segments the area added (what the server reserved;"
	  . " they grow in doubling steps). `state.states` counts each entry's own bytes only. Tables: `pg_table_size` and"
	  . " `pg_indexes_size` after the insert and a `VACUUM`.";
	md "";
	md md_table(\@mem_head, @mem_body);
}
if (@r_ps_body || @r_bulk_body || @r_ckpt_body || %rload)
{
	md "## RocksDB";
	md "";
	md "rocksdb states live in the one RocksDB instance of the state worker (block cache and write buffers at their defaults,"
	  . " 64 MB each; `rocksdb_sync` off); sessions reach it through shared-memory request rings. `value_set` is posted and"
	  . " waited for at the end of the statement; `value_get` reads the shared cache of entries"
	  . " (`state_backend.rocksdb_shared_cache_size`, 32 MB by default: about 230,000 small entries, so hot keys are"
	  . " cached and random keys of 1M mostly not) and asks the worker on a miss; `reduce` is a round trip. Every figure here"
	  . " comes from the rocksdb group, which measures its own floors and the same operations on the `$hl` backend, just"
	  . " before or after the rocksdb case, on states of its own (`rdb_*`).";
	md "";
	if (%rload)
	{
		md "Loading: " . join('; ', map {
			my ($n, $ms, $e, $b) = @{ $rload{$_} };
			sprintf('%s, %s keys by `value_set` in one statement per 1,000,000: %.0f ms, %s entries, %s bytes counted by `state.states`',
				$_, $n, $ms, $e // '-', $b // '-')
		} sort keys %rload) . '.';
		md "";
	}
	if (@r_ps_body)
	{
		md "### Per statement";
		md "";
		md "`pgbench -n -M $meta{protocol} -P 1`, " . join(' and ', map { "`-c $_ -j " . ($_ < 2 ? $_ : 2) . '`' } @rclients)
		  . ", as the statement group (median tps of $meta{seconds} s after the warm-up, best of $rounds round(s)). *random*:"
		  . " value states of $keys_n keys; *hot*: the first $meta{hot} keys of those value states, and for `reduce`"
		  . " reducing states holding only those $meta{hot} keys (a rocksdb reduce is a round trip, so loading $keys_n"
		  . " keys by reduce would take minutes). Ratios are tps ratios (higher is"
		  . " better for rocksdb); us/stmt is 1e6/tps.";
		md "";
		md md_table(\@r_floor_head, @r_floor_body);
		md md_table(\@r_ps_head, @r_ps_body);
		md "Scripts:";
		md "";
		for my $k (sort { ($b =~ /\|floor$/) <=> ($a =~ /\|floor$/) || $a cmp $b } keys %rscript)
		{
			my ($op, $keys, $target) = split /\|/, $k;
			(my $s = $rscript{$k}) =~ s/\\set \w+ random\([^)]*\)\s*//g;
			$s =~ s/\s+$//;
			md $target eq 'floor' ? "- floor: `$s`" : "- $op ($keys keys), $target: `$s`";
		}
		md "";
	}
	if (@r_bulk_body)
	{
		md "### Bulk";
		md "";
		md "One statement of $meta{bulk_rows} rows; best ms of $meta{bulk_reps} repetition(s). *new*: into an empty state"
		  . " (after `state.truncate`) or table (after `TRUNCATE`); *existing*: the same keys again. Time ratios, lower is better.";
		md "";
		md md_table(\@r_bulk_head, @r_bulk_body);
		md "- $_: `$rbulk_script{$_}`" for sort keys %rbulk_script;
		md "";
		md md_table([ 'target', 'keys', 'ms (each repetition)' ],
			map { my ($t, $v) = split /\|/; [ $t, $v, join(', ', @{ $rbulk{$_} }) ] } sort keys %rbulk);
	}
	if (@r_ckpt_body)
	{
		md "### Checkpoints";
		md "";
		md "With `state_backend.checkpoint_dir` set, every other state dropped first (a checkpoint holds every database's"
		  . " states, and heap states are written whole each time), a rocksdb value state of $keys_n (text, bigint) keys"
		  . " loaded by `value_set`; a first checkpoint (nothing to share yet: full), then every 100th key changed"
		  . (@rchange ? sprintf(' (%s keys, %.0f ms)', @rchange) : '') . ", then a second checkpoint. SST files go to"
		  . " `<checkpoint_dir>/shared/` once and are referenced by later checkpoints; *bytes* is what the worker wrote"
		  . " for the checkpoint (`state.snapshots.bytes`), *seconds* runs from the `snapshot()` call to `wait_snapshot()`"
		  . " returning (which polls every 10 ms), *worker seconds* is `finished_at - started_at`. On disk: the size of"
		  . " `chk-<id>` (MANIFEST, RocksDB's metadata files, lists) and of the SST files new under `shared/`.";
		md "";
		md "- checkpoint: `$rckpt_cmd{checkpoint}`" if $rckpt_cmd{checkpoint};
		md "- change: `$rckpt_cmd{change}`" if $rckpt_cmd{change};
		md "";
		md md_table(\@r_ckpt_head, @r_ckpt_body);
		if ($rckpt{full} && $rckpt{incremental})
		{
			md sprintf('Incremental / full: %s of the bytes (target: at most 10%%), %s of the time (worker: %s).',
				fpct(ratio(num($rckpt{incremental}[3]), $rfull)),
				fx(ratio(num($rckpt{incremental}[1]), num($rckpt{full}[1]))),
				fx(ratio(num($rckpt{incremental}[2]), num($rckpt{full}[2]))));
			md "";
		}
	}
}
if (@snap_body || %snap_skip)
{
	md "## Snapshots and restore";
	md "";
	md "A heap state (`$meta{snap_backend}` backend) of N (text key, bigint) entries, keys `'1'` to `'N'` holding 1 to N, the"
	  . " only state on the server (a snapshot holds every database's states); the same rows in an unlogged table"
	  . " `snap_t (k text PRIMARY KEY, v bigint)`. The steps run one after the other in the order of the table, each once per"
	  . " repetition (" . ($meta{snap_reps} // 1) . "; the table gives each step's fastest, the list below every one)"
	  . " and after a `sync`, so that none pays for writing back the dirty pages of the one before; every file is in the file"
	  . " system of the data directory. MB are 10^6 bytes: written by COPY TO (the file) and by a snapshot"
	  . " (`state.snapshots.bytes`), read by COPY FROM (the file) and by a restore (the snapshot's directory)."
	  . " *x COPY*: time against COPY TO for writes, against COPY FROM for reads; *x COPY TO + fsync*: against COPY TO"
	  . " followed by an fsync of its file, which is the durability a snapshot has.";
	md "";
	md "- COPY TO writes into the page cache and returns; a snapshot fsyncs every file, its MANIFEST and its directory"
	  . " before it completes. The two `dd` lines show what durability costs on this disk.";
	md "- `state.wait_snapshot()` looks at the snapshot's status every 10 ms, so the call-to-return time includes up to"
	  . " 10 ms of that on top of the worker's own time.";
	md "- A canonical snapshot is written native first and converted by the worker in a second pass"
	  . " (it writes about twice its size; MB counts its final size).";
	md "- COPY FROM and restore read files written moments before, from the page cache. A restore loads the snapshot"
	  . " beside the current state (of the same N entries) and puts it in its place at one instant; its time includes"
	  . " building the hash table, as COPY FROM's includes building the index.";
	md "";
	md "Statements and commands (`<tmp>` is the run's temporary directory, N the entries):";
	md "";
	for my $k (qw(load copy_to copy_to_fsync snapshot snapshot_worker copy_from restore dd))
	{
		md "- $k: `$snap_cmd{$k}`" if defined $snap_cmd{$k};
	}
	md "";
	md md_table(\@snap_head, @snap_body) if @snap_body;
	for my $n (@snap_sizes)
	{
		my ($sec, $bytes) = (snap_sec($n, 'snapshot_native'), snap_fig($n, 'snapshot_native', 1));
		my ($dd, $ddn) = (dd_mbps($n, 'fsync'), dd_mbps($n, 'nofsync'));
		next unless defined $sec && defined $dd && $dd > 0;
		md sprintf("- %d entries: the native snapshot wrote %.0f MB/s, %.0f%% of the disk's durable sequential write speed"
			  . " (dd with conv=fsync, %.0f MB/s; without fsync, into the page cache, %.0f MB/s).",
			$n, mbps($bytes, $sec), 100 * mbps($bytes, $sec) / $dd, $dd, $ddn // 0);
	}
	md "- $_ entries: skipped, $snap_skip{$_}." for sort { $a <=> $b } keys %snap_skip;
	md "";
	if (@snap_size_body)
	{
		md "Sizes (bytes):";
		md "";
		md md_table(\@snap_size_head, @snap_size_body);
	}
	my @every;
	for my $n (@snap_sizes)
	{
		for my $st (@snap_steps)
		{
			my $r = $snap{"$n|$st->[0]"} or next;
			push @every, [ $n, $st->[0], join(', ', map { defined num($_->[0]) ? sprintf('%.3f', $_->[0]) : $_->[0] } @$r) ];
		}
	}
	if (@every)
	{
		md "Every repetition (seconds, in order):";
		md "";
		md md_table([ 'entries', 'step', 'seconds' ], @every);
	}
}
if (@lat_body)
{
	my $w = $meta{lat_warmup} // 0;
	md "## Writers' latency during snapshots";
	md "";
	md "$meta{lat_clients} clients writing `value_set` on random keys of the state of $meta{lat_keys} entries"
	  . " (script: `$lat_script`), for $meta{lat_seconds} s after a warm-up of $w s: once with no snapshot running, once"
	  . " while another session (one `psql`) takes native snapshots of the whole state back to back"
	  . (defined $meta{lat_snapshot_cpu_percent} ? " (`state_backend.snapshot_cpu_percent = $meta{lat_snapshot_cpu_percent}`; the timed snapshots above ran at 100)" : '')
	  . ", from the end of the"
	  . " warm-up until pgbench ends, each into a fresh directory that it removes right after. Latencies come from"
	  . " pgbench's per-transaction log (`-l`): every transaction that ended in the $meta{lat_seconds} s after the warm-up"
	  . " (a new server process first faults in the shared memory it touches), nearest-rank percentiles, in microseconds.";
	md "";
	md "- `$lat_cmd{$_}`" for grep { $lat_cmd{$_} } qw(idle snapshots);
	md "";
	md md_table(\@lat_head, @lat_body);
	if (defined $lat_p99_ratio)
	{
		my $l = $lat{snapshots};
		md sprintf('p99 with snapshots running / without: %s; p99.9: %s; tps: %s.', fx($lat_p99_ratio),
			fx(ratio($l->[3], $lat{idle}[3])), fx($lat_tps_ratio))
		  . ((defined num($l->[11]) && num($l->[9]) && num($l->[6]))
			? sprintf(' The worker took %s ms per snapshot on average, %s ms at most (over the %s snapshots that `state.snapshots`,'
				  . ' which keeps the last 64, still lists): a snapshot was running for about %.0f%% of the measured %s s.',
				$l->[11], $l->[12] // '-', $l->[10], min(100, 100 * $l->[11] * $l->[9] / (1000 * $l->[6])), $l->[6])
			: '');
		md "";
	}
	md "On this machine's " . ($meta{ncpu} // '?') . " CPUs the snapshot worker (and the session driving it) competes with"
	  . " the $meta{lat_clients} clients and their $meta{lat_clients} server processes for CPU time: part of what the writers lose"
	  . " during snapshots is CPU, not waiting on the snapshot's partition locks.";
	md "";
}
if (%script)
{
	md "## Statements";
	md "";
	md "Per statement (pgbench scripts; `:k`, `:v`, `:mk` are `\\set` from random(), sent as untyped parameters):";
	md "";
	for my $k (sort keys %script)
	{
		my ($op, $keys, $target) = split /\|/, $k;
		next if $keys eq 'hot';
		(my $s = $script{$k}) =~ s/\\set \w+ random\([^)]*\)\s*//g;
		$s =~ s/\s+$//;
		md "- $op, $target: `$s`";
	}
	md "";
}
if (%bulk_script)
{
	md "Bulk:";
	md "";
	md "- $_: `$bulk_script{$_}`" for sort keys %bulk_script;
	md "";
}
if (%state_size || %table_size)
{
	md "## Sizes after preloading";
	md "";
	md md_table([ 'state or table', 'entries', 'bytes' ],
		(map { [ $_, @{ $state_size{$_} } ] } sort keys %state_size),
		(map { [ $_, '', $table_size{$_} ] } sort keys %table_size));
}
if (@runs)
{
	md "## Every pgbench run";
	md "";
	md "tps and latency: medians of the per-second figures after the warm-up; transactions, failures and whole-run tps"
	  . " (pgbench's own figure) cover the whole run, warm-up included.";
	md "";
	md md_table([ 'op', 'keys', 'target', 'clients', 'round', 'tps', 'latency ms', 'transactions', 'failed', 'whole-run tps' ],
		map { [ map { $_ // '' } @$_[ 0 .. 9 ] ] } @runs);
}
if (%bulk)
{
	md "## Every bulk statement";
	md "";
	md md_table([ 'op', 'target', 'keys', 'ms (each repetition)' ],
		map { my ($op, $t, $v) = split /\|/; [ $op, $t, $v, join(', ', @{ $bulk{$_} }) ] } sort keys %bulk);
}
if (@notes || $failed)
{
	md "## Notes";
	md "";
	md "- $_" for @notes;
	md "- $failed case(s) failed to run." if $failed;
	md "";
}

open(my $fh, '>', $outfile) or die "report.pl: $outfile: $!\n";
print $fh $md;
close $fh or die "report.pl: $outfile: $!\n";
