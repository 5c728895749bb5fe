//! QEMU: arguments, the accelerator decision, and running a guest.
pub mod accel;
pub mod cell;
pub mod qemu;
