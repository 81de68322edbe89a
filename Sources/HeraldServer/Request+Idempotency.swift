import Crypto
import Foundation
import HTTPTypes
import HeraldCore
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
        // Every request under a key pays for this, so it allocates little: the parts are hashed
        // where they lie. What is hashed must not change between releases (a retry that spans
        // an upgrade must match its first attempt).
        var hash = SHA256()
        func add(_ bytes: UnsafeRawBufferPointer) {
            withUnsafeBytes(of: UInt64(bytes.count).bigEndian) { hash.update(bufferPointer: $0) }
            hash.update(bufferPointer: bytes)
        }
        func add(_ text: String) {
            var text = text
            text.withUTF8 { add(UnsafeRawBufferPointer($0)) }
        }
        add(method.rawValue)
        add(uri.path)
        add(uri.queryParameters.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "&"))
        var sendHeaders: [String] = []
        for field in headers where Self.isSendHeader(field.name) {
            // The media type of Content-Type only: a charset or a multipart boundary is not
            // another request.
            let value = field.name == .contentType ? Self.mediaType(field.value) : field.value
            sendHeaders.append(field.name.canonicalName + ":" + value)
        }
        sendHeaders.sort()
        for header in sendHeaders { add(header) }
        body.withUnsafeBytes { add($0) }
        let digest = hash.finalize().withUnsafeBytes { $0.lowercaseHex }
        return try IdempotencyKey(key, scope: scope, digest: digest, answer: answer, retention: retention)
    }

    /// Whether a header changes what a send sends: the hub API's `ServiceBusNotification-*`,
    /// the push services' own (`apns-*`, `X-WNS-*`, `TTL`, `Urgency`, `Topic`), a browser's
    /// keys (`Auth`, `P256DH`) and `Content-Type`. Not `Authorization`, `Date` or tracing
    /// headers, which a client's retry may renew.
    static func isSendHeader(_ name: HTTPField.Name) -> Bool {
        let name = name.canonicalName
        switch name {
        case "content-type", "ttl", "urgency", "topic", "auth", "p256dh":
            return true
        default:
            return name.hasPrefix("servicebusnotification-") || name.hasPrefix("apns-") || name.hasPrefix("x-wns-")
                || name.hasPrefix("x-apns-")
        }
    }

    /// A Content-Type's media type: what comes before its first `;`, without the whitespace
    /// around it, in lowercase.
    static func mediaType(_ contentType: String) -> String {
        guard contentType.utf8.allSatisfy({ $0 < 0x80 }) else {
            // Beyond ASCII, characters and Foundation's notion of whitespace decide.
            return contentType.split(separator: ";").first.map { $0.trimmingSpaces().lowercased() } ?? ""
        }
        // In ASCII a character is a byte, and whitespace is a space or a tab.
        guard let type = contentType.utf8.split(separator: UInt8(ascii: ";")).first else { return "" }
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = type.firstIndex(where: { !isBlank($0) }), let last = type.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(decoding: type[first...last], as: UTF8.self).lowercased()
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
