public import Foundation

extension UUID {
    /// A version 4 UUID from the system's random generator (`getrandom`), which needs no file
    /// descriptor. Foundation's `UUID()` reads `/dev/urandom` on Linux and, when the process
    /// has run out of file descriptors, returns the same all-zero UUID every time: a server
    /// must not let an overload turn its identifiers into duplicates.
    public static func random() -> UUID {
        // Two draws of eight bytes: each draw is a system call.
        var generator = SystemRandomNumberGenerator()
        let high = generator.next().bigEndian, low = generator.next().bigEndian
        var uuid = uuid_t(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            bytes.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            bytes[6] = (bytes[6] & 0x0F) | 0x40
            bytes[8] = (bytes[8] & 0x3F) | 0x80
        }
        return UUID(uuid: uuid)
    }
}
