import Foundation
import Synchronization

/// Cheap random identifiers: one allocation each, no Foundation formatting.
enum RandomIdentifier {
    /// SplitMix64 over a shared counter, seeded from the system generator: unique, well-mixed
    /// and without a system call per value. For message IDs only, never for secrets.
    private static let counter = Atomic<UInt64>(
        {
            var generator = SystemRandomNumberGenerator()
            return generator.next()
        }())

    private static func nextMixed() -> UInt64 {
        var z = counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    private static let tokenAlphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8
    )

    /// A random-looking (version 4) UUID, lowercase, `8-4-4-4-12`; unique within the process.
    static func uuid() -> String {
        var high = nextMixed()
        var low = nextMixed()
        high = (high & ~0xF000) | 0x4000  // version 4
        low = (low & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000  // RFC 4122 variant
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            func put(_ value: UInt64, nibbles: Int) {
                var shift = (nibbles - 1) * 4
                for _ in 0..<nibbles {
                    buffer[position] = hexDigits[Int((value >> UInt64(shift)) & 0xF)]
                    position += 1
                    shift -= 4
                }
            }
            func dash() {
                buffer[position] = UInt8(ascii: "-")
                position += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return 36
        }
    }

    /// `byteCount` random bytes as lowercase hex.
    static func hex(byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return String(unsafeUninitializedCapacity: byteCount * 2) { buffer in
            for index in 0..<byteCount {
                let byte = generator.next() as UInt8
                buffer[2 * index] = hexDigits[Int(byte >> 4)]
                buffer[2 * index + 1] = hexDigits[Int(byte & 0xF)]
            }
            return byteCount * 2
        }
    }

    /// `count` random characters of `[A-Za-z0-9_-]`.
    static func token(count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return String(unsafeUninitializedCapacity: count) { buffer in
            for index in 0..<count {
                buffer[index] = tokenAlphabet[Int(generator.next(upperBound: UInt8(64)))]
            }
            return count
        }
    }

    /// `byteCount` random bytes in standard base64 with padding, like APNs' broadcast channel ids.
    static func base64(byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<byteCount).map { _ in generator.next() as UInt8 }).base64EncodedString()
    }

    /// `count` random characters of `[A-Z0-9]`, like Apple's key and team IDs.
    static func appleID(count: Int = 10) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(unsafeUninitializedCapacity: count) { buffer in
            for index in 0..<count {
                buffer[index] = alphabet[Int(generator.next(upperBound: UInt8(alphabet.count)))]
            }
            return count
        }
    }
}
