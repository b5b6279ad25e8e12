//! USM/DSM meters and HashPipe (placeholder: being written).
pub mod hash {
    pub fn crc32(b: &[u8]) -> u32 {
        crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(b)
    }
}
