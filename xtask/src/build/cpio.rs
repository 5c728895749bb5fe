//! A newc ("070701") cpio writer, the format the kernel unpacks as initramfs.
//!
//! Pure: entries in, bytes out. Deterministic (fixed mtimes and inode
//! numbers), so the same inputs give the same initramfs and the same hash.

use std::io::Write;

#[derive(Debug, Clone)]
pub enum Entry {
    Dir {
        path: String,
        mode: u32,
    },
    File {
        path: String,
        mode: u32,
        data: Vec<u8>,
    },
    Symlink {
        path: String,
        target: String,
    },
    /// A device node: the kernel needs /dev/console before init can open it.
    CharDev {
        path: String,
        mode: u32,
        major: u32,
        minor: u32,
    },
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

fn header(
    out: &mut Vec<u8>,
    ino: u32,
    mode: u32,
    nlink: u32,
    filesize: usize,
    rdev: (u32, u32),
    name: &str,
) {
    let fields = [
        ino,
        mode,
        0,
        0,
        nlink,
        0,
        filesize as u32,
        0,
        0,
        rdev.0,
        rdev.1,
        name.len() as u32 + 1,
        0,
    ];
    write!(out, "070701").unwrap();
    for f in fields {
        write!(out, "{f:08X}").unwrap();
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
}

/// Serialises entries in order; parents must come before their children.
pub fn write(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let ino = i as u32 + 1;
        match e {
            Entry::Dir { path, mode } => header(&mut out, ino, S_IFDIR | mode, 2, 0, (0, 0), path),
            Entry::File { path, mode, data } => {
                header(&mut out, ino, S_IFREG | mode, 1, data.len(), (0, 0), path);
                out.extend_from_slice(data);
                pad4(&mut out);
            }
            Entry::Symlink { path, target } => {
                header(
                    &mut out,
                    ino,
                    S_IFLNK | 0o777,
                    1,
                    target.len(),
                    (0, 0),
                    path,
                );
                out.extend_from_slice(target.as_bytes());
                pad4(&mut out);
            }
            Entry::CharDev {
                path,
                mode,
                major,
                minor,
            } => header(&mut out, ino, S_IFCHR | mode, 1, 0, (*major, *minor), path),
        }
    }
    header(&mut out, 0, 0, 1, 0, (0, 0), "TRAILER!!!");
    out
}

pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Entry> {
        vec![
            Entry::Dir {
                path: "bin".into(),
                mode: 0o755,
            },
            Entry::File {
                path: "bin/hello".into(),
                mode: 0o755,
                data: b"hi\n".to_vec(),
            },
            Entry::Symlink {
                path: "bin/sh".into(),
                target: "hello".into(),
            },
            Entry::CharDev {
                path: "console".into(),
                mode: 0o600,
                major: 5,
                minor: 1,
            },
        ]
    }

    #[test]
    fn header_layout_is_newc() {
        let b = write(&[Entry::File {
            path: "a".into(),
            mode: 0o644,
            data: b"xyz".to_vec(),
        }]);
        // 110-byte header + "a\0" padded to 112, then 3 bytes of data padded to 4.
        assert_eq!(&b[..6], b"070701");
        assert_eq!(&b[6..14], b"00000001"); // ino
        assert_eq!(&b[14..22], b"000081A4"); // S_IFREG | 0644
        assert_eq!(&b[54..62], b"00000003"); // filesize
        assert_eq!(&b[94..102], b"00000002"); // namesize includes the NUL
        assert_eq!(&b[110..112], b"a\0");
        assert_eq!(&b[112..115], b"xyz");
        assert_eq!(b.len() % 4, 0);
        assert!(b.windows(10).any(|w| w == b"TRAILER!!!"));
    }

    /// The whole archive, byte for byte, against the checked-in
    /// tests/fixtures/golden/sample.cpio (regenerate: KMATRIX_BLESS=1, see
    /// golden.rs). It holds no mtime, uid or host inode, so a change here is
    /// a change of the format we write, and of every initramfs.
    #[test]
    fn sample_archive_matches_the_golden_file() {
        crate::golden::check("sample.cpio", &write(&sample()));
    }

    /// The gzip layer adds nothing from the host or the clock: a fixed header
    /// (deflate, no flags and so no file name, MTIME 0, XFL 4 for the fastest
    /// level, OS 255 "unknown"), and it inflates to exactly the archive. The
    /// compressed bytes themselves are not pinned: they are the deflate
    /// implementation's (flate2's backend) and may change with its version.
    #[test]
    fn gzip_header_is_fixed_and_inflates_to_the_archive() {
        use std::io::Read;
        let cpio = write(&sample());
        let gz = gzip(&cpio);
        assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, cpio);
    }

    /// The system's cpio must read back what we write, names, kinds and data.
    #[test]
    fn gnu_cpio_reads_it_back() {
        if std::process::Command::new("cpio")
            .arg("--version")
            .output()
            .is_err()
        {
            // As the integration tests do: a failure under CI, else a skip
            // that says so.
            assert!(
                !crate::host::ui::ci(),
                "gnu_cpio_reads_it_back: cpio(1) is missing, and CI is set: run `cargo xtask setup`"
            );
            eprintln!(
                "gnu_cpio_reads_it_back: SKIPPED: cpio(1) is missing (run `cargo xtask setup`)"
            );
            return;
        }
        let dir = crate::util::test_tmp().join(format!("kmatrix-cpio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let archive = dir.join("a.cpio");
        std::fs::write(&archive, write(&sample())).unwrap();
        let out = std::process::Command::new("cpio")
            .args(["-itv", "-F"])
            .arg(&archive)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listing = String::from_utf8(out.stdout).unwrap();
        assert!(listing.contains("drwxr-xr-x"), "{listing}");
        assert!(listing.contains("bin/sh -> hello"), "{listing}");
        assert!(
            listing
                .lines()
                .any(|l| l.starts_with("crw-------") && l.contains("5,") && l.contains("console")),
            "{listing}"
        );
        let x = std::process::Command::new("cpio")
            .args(["-i", "--quiet", "-F"])
            .arg(&archive)
            .current_dir(&dir)
            .output()
            .unwrap();
        // Unprivileged extraction of the device node may fail; the file must not.
        let _ = x;
        assert_eq!(std::fs::read(dir.join("bin/hello")).unwrap(), b"hi\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
