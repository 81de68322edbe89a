import HeraldCore

/// Ids of secure payloads and rich content: positive decimal numbers below 2³¹, random, so that
/// the tutorials' device code — `[[userInfo objectForKey:@"secureId"] intValue]`, then
/// `GET /api/notifications/%d` — reads and formats them unchanged.
///
/// An id is 30 random bits from the system's CSPRNG and one bit for its kind: odd ids are
/// secure payloads, even ids rich content. The two kinds share `GET /api/notifications/{id}`,
/// and this keeps them apart without a table of ids both stores would have to share: each
/// kind's table refuses a taken id (``HeraldStore/ContentStore/saveSecureMessage(_:)``), and
/// ``save(_:random:_:)`` then tries another one.
///
/// Ids are not secrets: only the addressee can read what one names, and an id of someone
/// else's content is answered like an unknown one.
enum ContentID {
    enum Kind: Sendable, Hashable {
        case secure, rich
    }

    /// How many ids ``save(_:random:_:)`` tries before it gives up. With a million live items
    /// of a kind, one try in a thousand finds its id taken, so eight all taken do not happen.
    static let attempts = 8

    /// Legacy ids, made by releases before ids were numbers: 22 characters of base64url.
    static let legacyLength = 22

    /// The id of `kind` made from `bits` (only the low 30 are used), or `nil` for the one
    /// value that gives no id (0, for rich content).
    static func make(_ kind: Kind, bits: UInt64) -> String? {
        let doubled = (bits & 0x3FFF_FFFF) << 1
        let value = kind == .secure ? doubled | 1 : doubled
        guard value > 0 else { return nil }
        return String(value)
    }

    /// Calls `save` with new random ids of `kind` until one is not taken (`save` throws a
    /// ``HeraldError`` with the code `conflict` for a taken id), and returns that id.
    static func save(
        _ kind: Kind,
        random: @Sendable () -> UInt64,
        _ save: (String) async throws -> Void
    ) async throws -> String {
        for _ in 0..<attempts {
            guard let id = make(kind, bits: random()) else { continue }
            do {
                try await save(id)
                return id
            } catch let error as HeraldError where error.code == .conflict {
                continue
            }
        }
        throw HeraldError(code: .internalError, message: "no free id was found for new content; try again")
    }

    /// The value of an id made here: the canonical decimal form (no sign, no leading zero) of
    /// a number in `1...Int32.max`; `nil` for anything else.
    static func value(of id: String) -> Int32? {
        guard (1...10).contains(id.utf8.count), id.utf8.first != UInt8(ascii: "0"),
            id.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let value = Int32(id), value > 0
        else { return nil }
        return value
    }

    /// The kinds `id` may name: one for an id made here (by its lowest bit), both for a legacy
    /// id (still readable until it expires), none for anything else — which is answered like
    /// an unknown id and never reaches the store.
    static func kinds(of id: String) -> [Kind] {
        if let value = value(of: id) { return [value & 1 == 1 ? .secure : .rich] }
        return isLegacy(id) ? [.secure, .rich] : []
    }

    private static func isLegacy(_ id: String) -> Bool {
        id.utf8.count == legacyLength
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }
}
