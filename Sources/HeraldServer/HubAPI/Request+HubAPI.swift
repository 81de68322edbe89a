import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

extension Request {
    /// Whether the query has this flag (`?direct`, `&test`), with or without a value.
    func hasQueryFlag(_ name: String) -> Bool {
        guard let query = uri.query else { return false }
        return query.split(separator: "&").contains { item in
            let key = item.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return key.caseInsensitiveCompare(name) == .orderedSame
        }
    }

    /// A query parameter read as HTML forms encode it, as the SDKs write their queries: the
    /// key and the value percent-decoded, `+` a space (`$filter=ChannelUri+eq+%27…%27`,
    /// `%24top=10`).
    func formQuery(_ name: String) -> String? {
        guard let query = uri.query else { return nil }
        func decode(_ part: Substring) -> String {
            part.percentDecoded(plusIsSpace: true) ?? part.replacingOccurrences(of: "+", with: " ")
        }
        for item in query.split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if decode(pair[0]) == name { return pair.count == 2 ? decode(pair[1]) : "" }
        }
        return nil
    }

    /// A header by name, case-insensitively.
    func header(_ name: String) -> String? {
        guard let field = HTTPField.Name(name) else { return nil }
        return headers[field]
    }

    /// The whole body, refusing more than `limit` bytes with 413.
    func bodyData(limit: Int) async throws -> Data {
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            // Only an oversized body is a 413; a connection that breaks is not the client's payload.
            throw HeraldError.payloadTooLarge("the request body is larger than the hub accepts (\(limit / 1024) KB)")
        }
        return Data(buffer.readableBytesView)
    }
}
