#!/usr/bin/perl
# report_proxy.pl RAW.tsv RESULTS.md: the proxy figures of a run (lines "px"
# written by bench/lib/proxy.sh): calls through a proxy to 2 parts beside
# direct calls, the proxy's own CPU per call, and a projection for N
# servers.  Prints its table on stdout and appends it to the results file.
use strict;
use warnings;

die "usage: report_proxy.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %px);
open(my $in, '<', $rawfile) or die "report_proxy.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'px') { $px{"$f[0]|$f[1]"} = $f[2] }
}
close $in;
exit 0 unless %px;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub ok_ { my ($v) = @_; return defined $v && $v ne '' && $v ne 'ERR' && $v > 0 }
sub num { my ($v, $fmt) = @_; return ok_($v) ? sprintf($fmt, $v) : 'ERR' }
my $cores = $meta{px_cores} || 2;
# CPU per call with every core busy (clients included): cores / rate.
sub us { my ($tps) = @_; return ok_($tps) ? $cores * 1e6 / $tps : undef }

say_ '';
say_ '### Proxy (PL/Proxy)';
say_ '';
say_ "pgbench -M prepared, $meta{px_clients} clients, random keys of $meta{px_keys} (untyped bind parameters)."
  . ' Direct: the state in the database the clients connect to, as one server holds it. Proxy:'
  . ' the same calls through `state_proxy` (state.create_proxy) to 2 parts, databases of the same'
  . " server, so that both the proxy's and the part's work run on the same $cores cores. CPU per call:"
  . ' cores x 1,000,000 / calls per second (every core busy, pgbench included). Same run, same server.';
say_ '';
say_ '| call | direct (calls/s) | through the proxy (calls/s) | proxy / direct | CPU per call direct (µs) | through the proxy (µs) | the proxy\'s own (µs) |';
say_ '| --- | --- | --- | --- | --- | --- | --- |';
my %own;
for my $op (qw(get reduce))
{
	my ($d, $p) = ($px{"tps|direct_$op"}, $px{"tps|proxy_$op"});
	my ($ud, $up) = (us($d), us($p));
	$own{$op} = (defined $ud && defined $up) ? $up - $ud : undef;
	my $call = $op eq 'get' ? 'value_get' : 'reduce';
	say_ "| $call | " . num($d, '%.0f') . ' | ' . num($p, '%.0f') . ' | '
	  . ((ok_($d) && ok_($p)) ? sprintf('%.2fx', $p / $d) : '-') . ' | '
	  . (defined $ud ? sprintf('%.1f', $ud) : 'ERR') . ' | ' . (defined $up ? sprintf('%.1f', $up) : 'ERR') . ' | '
	  . (defined $own{$op} ? sprintf('%.1f', $own{$op}) : '-') . ' |';
}
say_ '';
say_ 'The floor, a no-op C function of one key per statement: ' . num($px{'tps|floor'}, '%.0f') . ' calls/s. '
  . 'The values the reduce calls through the proxy left on the parts add up to ' . ($px{'check|reduce_sum'} // '(not read)')
  . ' (one per call, warm-up included).';

# Projection: N part servers like this one, and proxies with the proxy's
# own CPU per call measured above.
my ($d, $own) = ($px{'tps|direct_get'}, $own{get});
if (ok_($d) && defined $own && $own > 0)
{
	say_ '';
	say_ "Projection for N part servers (value_get), assuming: each part serves what one server served"
	  . " directly here ($cores cores, " . sprintf('%.0f', $d) . ' calls/s, its clients\' CPU included, so'
	  . ' a conservative figure), keys spread evenly over the key groups and every call touching one part'
	  . ' (no cross-part work), the proxy stateless and added beside the parts (any number of proxy'
	  . " databases can name the same cluster), its own CPU per call as measured here (" . sprintf('%.1f', $own)
	  . ' µs), the network adding latency but no CPU, and enough clients to keep every part busy.';
	say_ '';
	say_ '| N parts | calls/s of the cluster | proxy cores it needs |';
	say_ '| --- | --- | --- |';
	for my $n (1, 2, 4, 8, 16)
	{
		my $t = $n * $d;
		say_ "| $n | " . sprintf('%.0f', $t) . ' | ' . sprintf('%.1f', $t * $own / 1e6) . ' |';
	}
}

print $out;
open(my $md, '>>', $outfile) or die "report_proxy.pl: $outfile: $!\n";
print $md $out;
close $md;
