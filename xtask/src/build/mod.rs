//! From a base and a series to a bootable kernel and an initramfs.
pub mod cpio;
pub mod guest;
pub mod kbuild;
pub mod ksft;
pub mod perf;
pub mod prepare;
pub mod series;
pub mod slots;
pub mod source;
