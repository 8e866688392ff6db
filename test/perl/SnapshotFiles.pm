# Reading and rewriting the files of a snapshot (test/t/*.pl), so that
# tests can hand restore files that are damaged on purpose, with every
# checksum made to match, and see that the damage is found.
#
# The layouts are those of src/format/format_internal.h (.kg framing),
# src/format/records.h (pairs, list and map images) and
# src/format/manifest.c; integers are little-endian, as on the machines
# the tests run on.

package SnapshotFiles;

use strict;
use warnings;

use Exporter 'import';

our @EXPORT = qw(
  crc32c
  read_kg
  write_kg
  read_manifest
  write_manifest
  read_checked_lines
  write_checked_lines
  manifest_state
  set_manifest_size
  list_image
  parse_list
  map_image
  parse_map
  slurp_bytes
  spew_bytes
  copy_dir
);

my @CRC_TABLE;

sub _crc_table
{
	return if @CRC_TABLE;
	for my $i (0 .. 255)
	{
		my $c = $i;
		$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
		$CRC_TABLE[$i] = $c;
	}
	return;
}

# CRC-32C (Castagnoli) of a byte string.
sub crc32c
{
	my ($data) = @_;
	_crc_table();
	my $crc = 0xFFFFFFFF;
	$crc = ($crc >> 8) ^ $CRC_TABLE[ ($crc ^ $_) & 0xFF ]
	  for unpack('C*', $data);
	return $crc ^ 0xFFFFFFFF;
}

sub slurp_bytes
{
	my ($path) = @_;
	open(my $fh, '<:raw', $path) or die "open $path: $!";
	local $/;
	my $data = <$fh>;
	close $fh;
	return $data;
}

sub spew_bytes
{
	my ($path, $data) = @_;
	open(my $fh, '>:raw', $path) or die "open $path: $!";
	print $fh $data;
	close $fh;
	return;
}

# A copy of a snapshot directory (or any file tree), to damage.
sub copy_dir
{
	my ($from, $to) = @_;
	system('cp', '-a', $from, $to) == 0 or die "cp -a $from $to failed";
	return;
}

# Pairs: [key length][value length][key][value] back to back.
sub _parse_pairs
{
	my ($buf, $count) = @_;
	my @pairs;
	my $off = 0;
	while ($off < length($buf) && (!defined $count || @pairs < $count))
	{
		my ($klen, $vlen) = unpack('L<L<', substr($buf, $off, 8));
		my $key = substr($buf, $off + 8, $klen);
		my $value =
		  $vlen == 0xFFFFFFFF ? undef : substr($buf, $off + 8 + $klen, $vlen);
		push @pairs, [ $key, $value ];
		$off += 8 + $klen + (defined $value ? $vlen : 0);
	}
	return \@pairs;
}

sub _pairs_image
{
	my ($pairs) = @_;
	my $out = '';
	for my $p (@$pairs)
	{
		my ($key, $value) = @$p;
		$out .= pack('L<L<', length($key),
			defined $value ? length($value) : 0xFFFFFFFF)
		  . $key
		  . (defined $value ? $value : '');
	}
	return $out;
}

# A list image from its elements, and back.
sub list_image
{
	return join('', map { pack('L<', length($_)) . $_ } @_);
}

sub parse_list
{
	my ($buf) = @_;
	my @elems;
	my $off = 0;
	while ($off < length($buf))
	{
		my $n = unpack('L<', substr($buf, $off, 4));
		push @elems, substr($buf, $off + 4, $n);
		$off += 4 + $n;
	}
	return @elems;
}

# A map image from [map key, value] pairs (value undef: NULL), and back.
sub map_image { return _pairs_image([@_]); }
sub parse_map { return @{ _parse_pairs($_[0]) }; }

# read_kg($path): { magic, version, format, state_id, key_groups,
# blocks => [ { kg, pairs => [[key, image], ...] } ] }
sub read_kg
{
	my ($path) = @_;
	my $data = slurp_bytes($path);
	my %kg;
	@kg{qw(magic version format state_id key_groups)} =
	  unpack('L<5', substr($data, 0, 20));
	my $index_offset = unpack('Q<', substr($data, length($data) - 16, 8));
	my $off = 24;
	my @blocks;
	while ($off < $index_offset)
	{
		my ($magic, $group, $entries, $len) =
		  unpack('L<4', substr($data, $off, 16));
		push @blocks,
		  {
			kg => $group,
			pairs => _parse_pairs(substr($data, $off + 20, $len), $entries)
		  };
		$off += 20 + $len;
	}
	$kg{blocks} = \@blocks;
	return \%kg;
}

# write_kg($path, $kg): the file, with every checksum and the index made
# to match what $kg holds; returns its size.
sub write_kg
{
	my ($path, $kg) = @_;
	my $head = pack('L<5', @$kg{qw(magic version format state_id key_groups)});
	my $out = $head . pack('L<', crc32c($head));
	my @index = map { [ 0, 0, 0 ] } 1 .. $kg->{key_groups};
	my $next = 0;
	for my $b (@{ $kg->{blocks} })
	{
		# key groups without blocks sit, empty, where the next one starts
		$index[ $next++ ][0] = length($out) while $next <= $b->{kg};
		my $payload = _pairs_image($b->{pairs});
		my $fields = pack('L<3', $b->{kg}, scalar @{ $b->{pairs} }, length($payload));
		$out .= pack('L<', 0x4B424253) . $fields
		  . pack('L<', crc32c($fields . $payload)) . $payload;
		$index[ $b->{kg} ][1] = length($out) - $index[ $b->{kg} ][0];
		$index[ $b->{kg} ][2] += scalar @{ $b->{pairs} };
	}
	$index[ $next++ ][0] = length($out) while $next < $kg->{key_groups};
	my $index_offset = length($out);
	my $ix = pack('L<L<', 0x58494253, $kg->{key_groups})
	  . join('', map { pack('Q<3', @$_) } @index);
	$out .= $ix . pack('L<', crc32c($ix));
	my $trailer = pack('Q<L<', $index_offset, 0x52544253);
	$out .= $trailer . pack('L<', crc32c($trailer));
	spew_bytes($path, $out);
	return length($out);
}

# The lines of a text file that ends with its checksum line ("crc32c
# XXXXXXXX": a MANIFEST, rocksdb/FILES), without that line.
sub read_checked_lines
{
	my ($path) = @_;
	my @lines = split /\n/, slurp_bytes($path);
	pop @lines if @lines && $lines[-1] =~ /^crc32c /;
	return @lines;
}

# Write such a file: the lines, then their checksum line.
sub write_checked_lines
{
	my ($path, @lines) = @_;
	my $body = join("\n", @lines) . "\n";
	spew_bytes($path, $body . sprintf("crc32c %08X\n", crc32c($body)));
	return;
}

# The MANIFEST's lines, without its checksum line.
sub read_manifest { return read_checked_lines("$_[0]/MANIFEST"); }

sub write_manifest
{
	my ($dir, @lines) = @_;
	return write_checked_lines("$dir/MANIFEST", @lines);
}

# The fields of the MANIFEST's line of state $name.
sub manifest_state
{
	my ($dir, $name) = @_;
	for my $line (read_manifest($dir))
	{
		next unless $line =~ /^state /;
		my %f = map { split /=/, $_, 2 } split / /, substr($line, 6);
		return \%f if $f{name} eq $name;
	}
	die "no state $name in $dir/MANIFEST";
}

# After a state's file changed size, the MANIFEST must say so.
sub set_manifest_size
{
	my ($dir, $file, $size) = @_;
	write_manifest($dir,
		map { s/^(state .*\bfile=\Q$file\E\b.*\bsize=)\d+/$1$size/r }
		  read_manifest($dir));
	return;
}

1;
