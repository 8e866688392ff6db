#!/usr/bin/perl
# smaps_delta.pl BEFORE AFTER: compare two copies of a backend's
# /proc/self/smaps and print "RSS_KB SIZE_KB" for its dynamic shared memory
# segments (/dev/shm/PostgreSQL.<n>): how many kB more of them the process
# had touched (Rss) in AFTER than in BEFORE, and the size of the segments
# that AFTER maps and BEFORE did not.
use strict;
use warnings;

sub segments
{
	my ($file) = @_;
	my (%seg, $cur);
	open(my $fh, '<', $file) or die "smaps_delta.pl: $file: $!\n";
	while (my $line = <$fh>)
	{
		if ($line =~ /^[0-9a-f]+-[0-9a-f]+\s+\S+\s+\S+\s+\S+\s+\d+\s*(\S*)/)
		{
			my $path = $1;
			$cur = ($path =~ m{/PostgreSQL\.\d+$}) ? $path : undef;
			$seg{$cur} //= { size => 0, rss => 0 } if defined $cur;
		}
		elsif (defined $cur && $line =~ /^(Size|Rss):\s+(\d+) kB/)
		{
			$seg{$cur}{ lc $1 } += $2;
		}
	}
	close $fh;
	return \%seg;
}

die "usage: smaps_delta.pl BEFORE AFTER\n" unless @ARGV == 2;
my ($before, $after) = map { segments($_) } @ARGV;
my ($rss, $size) = (0, 0);
for my $p (keys %$after)
{
	$rss += $after->{$p}{rss} - ($before->{$p} ? $before->{$p}{rss} : 0);
	$size += $after->{$p}{size} unless $before->{$p};
}
printf "%d %d\n", $rss, $size;
