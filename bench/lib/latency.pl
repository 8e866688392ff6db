#!/usr/bin/perl
# latency.pl [--overlap] FROM TO LOGFILE...: latency figures of pgbench's
# per-transaction logs (pgbench -l: "client transaction latency_us script
# epoch_s epoch_us"), counting the transactions that ended after FROM and at
# or before TO (Unix epoch seconds); with --overlap, those that ran during
# any part of FROM .. TO (ended after FROM, started before TO), so that a
# transaction that waited through the whole interval and ended after it
# counts.  Prints "transactions p50 p99 p99.9 max mean", latencies in
# microseconds; percentiles are nearest-rank.  Fails if none counted.
use strict;
use warnings;

my $overlap = 0;
$overlap = shift @ARGV if @ARGV && $ARGV[0] eq '--overlap';
die "usage: latency.pl [--overlap] FROM TO LOGFILE...\n" unless @ARGV >= 3;
my ($from, $to, @files) = @ARGV;
my @lat;
for my $f (@files)
{
	open(my $in, '<', $f) or die "latency.pl: $f: $!\n";
	while (<$in>)
	{
		my ($client, $tx, $us, $script, $s, $sus) = split;
		next unless defined $sus && $us =~ /^\d+$/;	# "skipped" / "failed" entries carry no latency
		my $end = $s + $sus / 1e6;
		if ($overlap) { push @lat, $us if $end > $from && $end - $us / 1e6 < $to }
		else { push @lat, $us if $end > $from && $end <= $to }
	}
	close $in;
}
die "latency.pl: no transaction between $from and $to\n" unless @lat;
@lat = sort { $a <=> $b } @lat;
my $n = @lat;
sub pct
{
	my ($p) = @_;
	my $r = $p * $n / 100;
	my $k = int($r);
	$k++ if $r - $k > 1e-9;
	return $lat[ $k < 1 ? 0 : $k - 1 ];
}
my $sum = 0;
$sum += $_ for @lat;
printf "%d %d %d %d %d %.0f\n", $n, pct(50), pct(99), pct(99.9), $lat[-1], $sum / $n;
