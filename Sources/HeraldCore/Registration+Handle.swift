import Foundation

extension Registration {
    /// Checks a push-service handle for a platform and returns it in the form Herald stores.
    ///
    /// - APNs: a device token in hex, 64–200 digits; spaces and `<` `>` (the old
    ///   `description` format) are removed, letters lowercased.
    /// - FCM: a registration token: 1–4096 characters of letters, digits, `_ - : .`.
    /// - WNS and Web Push: an `https` URL of at most 2048 characters.
    public static func normalizedHandle(_ handle: String, platform: Platform) throws(HeraldError) -> String {
        let trimmed = handle.trimmingWhitespace()
        guard !trimmed.isEmpty else { throw .badRequest("a handle is required") }
        switch platform {
        case .apns:
            // A token as the SDKs send it, lowercase hex digits only, is kept as it is.
            let token =
                trimmed.utf8.allSatisfy(\.isHexDigit)
                ? trimmed : String(trimmed.unicodeScalars.filter { $0 != " " && $0 != "<" && $0 != ">" }).lowercased()
            guard token.utf8.allSatisfy(\.isHexDigit) else {
                throw .badRequest("an APNs device token is hexadecimal (encode the token bytes as hex, two digits a byte)")
            }
            guard token.utf8.count % 2 == 0, (64...200).contains(token.utf8.count) else {
                throw .badRequest("an APNs device token has 64 to 200 hex digits, an even number; this one has \(token.utf8.count)")
            }
            return token
        case .fcm:
            guard trimmed.utf8.count <= 4096 else { throw .badRequest("an FCM registration token has at most 4096 characters") }
            guard trimmed.utf8.allSatisfy({ $0.isTokenCharacter }) else {
                throw .badRequest("an FCM registration token has only letters, digits and _ - : .")
            }
            return trimmed
        case .wns, .webpush:
            guard trimmed.utf8.count <= 2048 else { throw .badRequest("a \(platform) channel URL has at most 2048 characters") }
            guard trimmed.lowercased().hasPrefix("https://"), trimmed.utf8.count > 8,
                !trimmed.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7f })
            else {
                throw .badRequest("a \(platform == .wns ? "WNS channel URI" : "Web Push endpoint") is an https URL")
            }
            return trimmed
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
    }

    fileprivate var isTokenCharacter: Bool {
        switch self {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
