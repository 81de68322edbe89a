import Crypto
import Foundation
import HeraldCore
import HTTPTypes
import Hummingbird

extension Request {
    /// The request's `Idempotency-Key`, if it sent one, with the digest of the request it stands
    /// for: SHA-256 over the method, the path, the query, the headers that change what is sent
    /// (see ``isSendHeader(_:)``) and `body`, each length-prefixed. Two requests with the same
    /// digest send the same notification; an `Authorization` renewed between a first attempt
    /// and its retry does not change it.
    ///
    /// - Throws: ``HeraldError/badRequest(_:)`` naming what is wrong with the key (empty,
    ///   too long, not printable ASCII, or sent twice); nothing has been changed yet.
    func idempotencyKey(scope: String, body: Data, retention: Duration, answer: String? = nil) throws -> IdempotencyKey? {
        let values = headers[values: .idempotencyKey]
        guard let key = values.first else { return nil }
        guard values.count == 1 else {
            throw HeraldError.badRequest("the request has \(values.count) \(IdempotencyKey.headerName) headers; send one")
        }
        try IdempotencyKey.validate(key)
        var hash = SHA256()
        func add(_ bytes: some Sequence<UInt8>) {
            let data = Data(bytes)
            withUnsafeBytes(of: UInt64(data.count).bigEndian) { hash.update(bufferPointer: $0) }
            hash.update(data: data)
        }
        add(method.rawValue.utf8)
        add(uri.path.utf8)
        add(uri.queryParameters.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "&").utf8)
        let sendHeaders = headers.filter { Self.isSendHeader($0.name) }
            .map { field in
                // The media type of Content-Type only: a charset or a multipart boundary is not
                // another request.
                let value = field.name == .contentType
                    ? (field.value.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? "")
                    : field.value
                return "\(field.name.canonicalName):\(value)"
            }
            .sorted()
        for header in sendHeaders { add(header.utf8) }
        add(body)
        let digest = hash.finalize().lowercaseHex
        return try IdempotencyKey(key, scope: scope, digest: digest, answer: answer, retention: retention)
    }

    /// Whether a header changes what a send sends: the hub API's `ServiceBusNotification-*`,
    /// the push services' own (`apns-*`, `X-WNS-*`, `TTL`, `Urgency`, `Topic`), a browser's
    /// keys (`Auth`, `P256DH`) and `Content-Type`. Not `Authorization`, `Date` or tracing
    /// headers, which a client's retry may renew.
    static func isSendHeader(_ name: HTTPField.Name) -> Bool {
        let name = name.canonicalName
        return name.hasPrefix("servicebusnotification-") || name.hasPrefix("apns-") || name.hasPrefix("x-wns-")
            || name.hasPrefix("x-apns-") || ["content-type", "ttl", "urgency", "topic", "auth", "p256dh"].contains(name)
    }
}

extension Response {
    /// This answer marked as the replay of a first one (`Idempotent-Replayed: true`) when
    /// `replayed`.
    func markedReplayed(_ replayed: Bool) -> Response {
        guard replayed else { return self }
        var response = self
        response.headers[.idempotentReplayed] = "true"
        return response
    }
}

extension HTTPField.Name {
    /// `Idempotency-Key` (a valid field name, so the initializer does not fail).
    static let idempotencyKey = HTTPField.Name(IdempotencyKey.headerName)!
    /// `Idempotent-Replayed`.
    static let idempotentReplayed = HTTPField.Name(IdempotencyKey.replayedHeaderName)!
}
