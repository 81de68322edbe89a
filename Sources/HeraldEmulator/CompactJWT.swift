import Foundation

/// A JWT in compact serialization, split and base64url-decoded, not yet verified.
struct CompactJWT {
    let header: Data
    let claims: Data
    let signature: [UInt8]
    /// `base64url(header) "." base64url(claims)`: the bytes the signature covers.
    let signingInput: Data

    init?(_ token: Substring) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty,
            let header = Base64URL.decode(parts[0]),
            let claims = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { return nil }
        self.header = Data(header)
        self.claims = Data(claims)
        self.signature = signature
        self.signingInput = Data(token[parts[0].startIndex..<parts[1].endIndex].utf8)
    }

    func decodeHeader<T: Decodable>(_ type: T.Type) -> T? {
        try? JSONDecoder().decode(T.self, from: header)
    }

    func decodeClaims<T: Decodable>(_ type: T.Type) -> T? {
        try? JSONDecoder().decode(T.self, from: claims)
    }
}
