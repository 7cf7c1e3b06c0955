// Package ipvsadm reads and writes IPVS state in the text forms of the
// ipvsadm tool, so that a table can be diffed, logged, and seeded with
// either ipvsadm or package ipvs:
//
//   - the lines `ipvsadm -Sn` prints and `ipvsadm -R` reads: Save and
//     MarshalSnapshot render an ipvs.Snapshot, UnmarshalSnapshot reads one
//     back; MarshalBatch renders an ipvs.Batch as the -A/-E/-D/-a/-e/-d
//     commands it makes, UnmarshalBatch reads them into one;
//   - the table `ipvsadm -Ln` lists, with --stats, --rate, --thresholds,
//     --persistent-conn, --tun-info or --exact: WriteTable and AppendTable.
//
// For example:
//
//	-A -t 198.18.0.1:80 -s rr
//	-a -t 198.18.0.1:80 -r 198.18.1.1:8080 -m -w 1
//	-A -f 7 -6 -s sh -p 300 -M 64 -b sh-port
//	-a -f 7 -6 -r [2001:db8::1]:0 -i -w 2 --tun-type gue --tun-port 6080 --tun-nocsum
//
// Output matches Debian's ipvsadm byte for byte (the package's tests hold
// it to ipvsadm's own output in a VM); input is read the way ipvsadm reads
// it, and a bad line is a *TextError naming the line and the option.
//
// Package ipvs does not import this one. Until they moved here these were
// methods of ipvs.Snapshot and ipvs.Batch: Snapshot.SaveText is Save,
// Snapshot.MarshalText and UnmarshalText are MarshalSnapshot and
// UnmarshalSnapshot, Batch.MarshalText and UnmarshalText are MarshalBatch and
// UnmarshalBatch, Snapshot.WriteTable and AppendTable are WriteTable and
// AppendTable (the Snapshot now the second argument); ipvs.TextError,
// ipvs.ErrText, ipvs.TableFormat, ipvs.TableOptions and the ipvs.Table*
// formats are TextError, ErrText, TableFormat, TableOptions and Table* here.
package ipvsadm
