import Foundation

/// Ids of secure payloads and rich content: 128 random bits in base64url (22 characters),
/// so that they cannot be guessed or enumerated.
enum ContentID {
    static let length = 22

    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in bytes.indices { bytes[i] = generator.next() }
        return Data(bytes).base64URLEncoded()
    }

    /// Whether `id` has the shape of an id made here. Anything else is answered like an
    /// unknown id, and never reaches a file path.
    static func isWellFormed(_ id: String) -> Bool {
        id.utf8.count == length && id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }
}
