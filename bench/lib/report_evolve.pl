#!/usr/bin/perl
# report_evolve.pl RAW.tsv RESULTS.md: the evolve figures of a run (lines
# "ev_*" written by bench/lib/evolve.sh): per size, each state.alter_state
# change's seconds beside the table's statement of the same run and their
# ratio, and the writers' throughput and p99 during each change beside the
# same writers without one.  Prints its tables on stdout and appends them
# to the results file.  Nothing is asserted.
use strict;
use warnings;

die "usage: report_evolve.pl RAW.tsv RESULTS.md\n" unless @ARGV == 2;
my ($rawfile, $outfile) = @ARGV;

my (%meta, %load, %change, %table, %writers, @order, %seen, $script);
open(my $in, '<', $rawfile) or die "report_evolve.pl: $rawfile: $!\n";
while (my $line = <$in>)
{
	chomp $line;
	my ($kind, @f) = split /\t/, $line, -1;
	next unless defined $kind;
	if ($kind eq 'meta') { $meta{ $f[0] } = $f[1] }
	elsif ($kind eq 'ev_load') { $load{ $f[0] } = $f[1] }    # n ms
	elsif ($kind eq 'ev_change')                              # n change from to ms entries
	{
		$change{"$f[0]|$f[1]"} = [ @f[ 2 .. 5 ] ];
		push @order, $f[1] unless $seen{ $f[1] }++;
	}
	elsif ($kind eq 'ev_table') { $table{"$f[0]|$f[1]"}{ $f[4] } = $f[5] }    # n change from to label ms
	elsif ($kind eq 'ev_writers') { $writers{"$f[0]|$f[1]|$f[2]"} = [ @f[ 3 .. $#f ] ] }   # n change label figures
	elsif ($kind eq 'ev_script') { $script = $f[0] }
}
close $in;
exit 0 unless %change || %load;

my $out = '';
sub say_ { $out .= join('', @_) . "\n" }
sub num { my ($v) = @_; return (defined $v && $v =~ /^[0-9.]+$/) ? $v : undef }
sub ratio { my ($a, $b) = @_; return (defined $a && defined $b && $b > 0) ? $a / $b : undef }
sub fx { my ($r) = @_; return defined $r ? sprintf('%.2fx', $r) : '-' }
sub fs { my ($ms) = @_; return defined $ms ? sprintf($ms < 10000 ? '%.3f' : '%.1f', $ms / 1000) : '-' }
sub group
{
	my ($n) = @_;
	1 while $n =~ s/^(\d+)(\d{3})/$1,$2/;
	return $n;
}

my $using_s = $meta{ev_using_state} // '?';
my $using_t = $meta{ev_using_table} // '?';
sub what
{
	my ($c, $from, $to) = @_;
	return "backend $from -> $to" if $c =~ /^backend:/;
	return 'value type bigint -> numeric (assignment cast)' if $c eq 'type';
	return "value type bigint -> numeric, `value_using => '$using_s'`" if $c eq 'using';
	return $c;
}
sub table_what
{
	my ($c) = @_;
	return '`CREATE UNLOGGED TABLE ... AS SELECT` + `ADD PRIMARY KEY`' if $c =~ /^backend:/;
	return '`ALTER COLUMN v TYPE numeric`' if $c eq 'type';
	return "`ALTER COLUMN v TYPE numeric USING $using_t`" if $c eq 'using';
	return '?';
}

my @sizes = split ' ', ($meta{ev_sizes} // '');
say_ '';
say_ '### State evolution (evolve)';
say_ '';
say_ 'One value state `ev_v` (bigint -> bigint, key i holding i) changed by `state.alter_state`, one change'
  . ' after the other, each timed alone (psql `\timing` of the one call), beside the statement that makes the'
  . ' same change to an unlogged table `ev_t (k bigint PRIMARY KEY, v bigint)` of the same rows, run just before'
  . ' it: for a change of backend, a keyed copy (`CREATE UNLOGGED TABLE ev_copy AS SELECT k, v FROM ev_t`,'
  . ' then `ALTER TABLE ev_copy ADD PRIMARY KEY (k)`, each timed, the table\'s seconds their sum); for a change'
  . ' of value type, `ALTER TABLE ev_t ALTER COLUMN v TYPE numeric` (a rewrite of the table and its index).'
  . ' Before the `value_using` change, the state and the table go back to bigint (untimed).'
  . ' Ratio: the state\'s seconds over the table\'s (below 1.00x: the state is faster). Same run, same server.';
say_ '';
say_ "Settings: $meta{ev_settings}." if $meta{ev_settings};
say_ '';

for my $n (@sizes)
{
	my @c = grep { exists $change{"$n|$_"} } @order;
	next unless @c || exists $load{$n};
	say_ '#### ' . group($n) . ' entries';
	say_ '';
	say_ 'Loaded into `memory` by `value_set` in statements of at most 1,000,000 entries: ' . fs($load{$n}) . ' s.'
	  if defined $load{$n};
	say_ '';
	say_ '| change | seconds | entries/s | table\'s statement | table\'s seconds | ratio |';
	say_ '| --- | ---: | ---: | --- | ---: | ---: |';
	for my $c (@c)
	{
		my ($from, $to, $ms, $entries) = @{ $change{"$n|$c"} };
		$ms = num($ms);
		my $t = $table{"$n|$c"} // {};
		my ($tms, $tcell);
		if ($c =~ /^backend:/)
		{
			my ($a, $b) = (num($t->{ctas}), num($t->{pkey}));
			$tms = defined $a && defined $b ? $a + $b : undef;
			$tcell = defined $tms ? sprintf('%s (%s + %s)', fs($tms), fs($a), fs($b)) : 'ERR';
		}
		else
		{
			$tms = num($t->{alter});
			$tcell = defined $tms ? fs($tms) : 'ERR';
		}
		say_ '| ' . what($c, $from, $to) . ' | ' . (defined $ms ? fs($ms) : 'ERR') . ' | '
		  . (defined $ms && $ms > 0 ? sprintf('%.0f', $n / ($ms / 1000)) : '-') . ' | '
		  . table_what($c) . " | $tcell | " . fx(ratio($ms, $tms)) . ' |';
	}
	say_ '';

	my @w = grep { $writers{"$n|$_|none"} || $writers{"$n|$_|change"} } @c;
	next unless @w;
	say_ "Writers: $meta{ev_clients} pgbench clients (-M prepared) of `value_set` on random keys, every transaction"
	  . ' logged; *without*: on the state as it is before the change, for as long as the change took alone'
	  . ' (at least ' . ($meta{ev_min_secs} // '?') . ' s) after a warm-up of ' . ($meta{ev_warmup} // '?')
	  . ' s; *during*: the same change again, started after the warm-up, the writers stopped a second after it'
	  . ' returned. Counted: the transactions that ran during any part of the interval (a writer that waited'
	  . ' through the whole change counts, with its wait); tps: those over the interval\'s seconds.'
	  . ' *Covered*: the part of the change the writers ran through (1.00: all of it).';
	say_ '';
	say_ '| change | tps without | tps during | during / without | p99 ms without | p99 ms during'
	  . ' | during / without | max ms during | seconds with writers | seconds alone | covered |';
	say_ '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |';
	for my $c (@w)
	{
		my ($from, $to, $ms) = @{ $change{"$n|$c"} };
		my ($a, $b) = ($writers{"$n|$c|none"}, $writers{"$n|$c|change"});
		# figures: transactions p50 p99 p99.9 max mean(us) seconds failed change-seconds covered
		my $ok_a = $a && defined num($a->[0]);
		my $ok_b = $b && defined num($b->[0]);
		my $tps_a = $ok_a ? ratio($a->[0], $a->[6]) : undef;
		my $tps_b = $ok_b ? ratio($b->[0], $b->[6]) : undef;
		my $p99_a = $ok_a ? $a->[2] / 1000 : undef;
		my $p99_b = $ok_b ? $b->[2] / 1000 : undef;
		say_ '| ' . what($c, $from, $to) . ' | '
		  . join(' | ',
			(defined $tps_a ? sprintf('%.0f', $tps_a) : 'ERR'),
			(defined $tps_b ? sprintf('%.0f', $tps_b) : 'ERR'),
			fx(ratio($tps_b, $tps_a)),
			(defined $p99_a ? sprintf('%.2f', $p99_a) : 'ERR'),
			(defined $p99_b ? sprintf('%.2f', $p99_b) : 'ERR'),
			fx(ratio($p99_b, $p99_a)),
			($ok_b ? sprintf('%.1f', $b->[4] / 1000) : '-'),
			($ok_b ? fs($b->[8] * 1000) : '-'),
			fs(num($ms)),
			($ok_b ? sprintf('%.2f', $b->[9]) : '-'))
		  . ' |';
	}
	say_ '';
	say_ 'Seconds this size took: ' . $meta{"ev_seconds_$n"} . '.' if $meta{"ev_seconds_$n"};
	say_ '';
}
say_ "Writers' script: `$script`." if $script;
say_ '';

print $out;
open(my $md, '>>', $outfile) or die "report_evolve.pl: $outfile: $!\n";
print $md $out;
close $md;
