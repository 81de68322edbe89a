public import Foundation

extension UUID {
    /// A version 4 UUID from the system's random generator (`getrandom`), which needs no file
    /// descriptor. Foundation's `UUID()` reads `/dev/urandom` on Linux and, when the process
    /// has run out of file descriptors, returns the same all-zero UUID every time: a server
    /// must not let an overload turn its identifiers into duplicates.
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0 ... .max, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
