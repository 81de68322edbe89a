import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import Hummingbird
import Mustache
import NIOCore

/// A signed-in operator, as a console request sees them.
struct ConsoleSignedIn: Sendable {
    var operatorName: String
    var csrfToken: String
    /// The session cookie's token.
    var token: String
    var mustChangePassword: Bool
}

/// Renders the console's pages from its embedded Mustache templates, and the responses
/// every console page shares: HTML with strict headers, redirects, forms.
struct ConsolePages: Sendable {
    let library: MustacheLibrary
    let version: String
    let node: String

    init(version: String, node: String) throws {
        var library = MustacheLibrary()
        let templates: [(String, [UInt8])] = [
            ("layout", PackageResources.layout_mustache),
            ("charts", PackageResources.charts_mustache),
            ("sign-in", PackageResources.sign_in_mustache),
            ("password", PackageResources.password_mustache),
            ("error", PackageResources.error_mustache),
            ("hubs", PackageResources.hubs_mustache),
            ("hub", PackageResources.hub_mustache),
            ("devices", PackageResources.devices_mustache),
            ("device", PackageResources.device_mustache),
            ("send", PackageResources.send_mustache),
            ("notifications", PackageResources.notifications_mustache),
            ("notification", PackageResources.notification_mustache),
            ("queue", PackageResources.queue_mustache),
            ("channels", PackageResources.channels_mustache),
            ("channel", PackageResources.channel_mustache),
        ]
        for (name, bytes) in templates {
            try library.register(String(decoding: bytes, as: UTF8.self), named: name)
        }
        self.library = library
        self.version = version
        self.node = node
    }

    /// The headers of every console response: no caching, no framing, no script or style
    /// from anywhere but the console itself.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .cacheControl: "no-store",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "same-origin",
    ]

    /// A page: `template` with `values`, and what every page shows (the operator, the CSRF
    /// token, the hub and its navigation).
    func page(
        _ template: String,
        title: String,
        _ values: [String: Any] = [:],
        context: AppRequestContext,
        hub: String? = nil,
        nav: String? = nil,
        status: HTTPResponse.Status = .ok,
        notice: String? = nil,
        error: String? = nil,
        refresh: Int? = nil
    ) -> Response {
        var all = values
        if let refresh { all["refresh"] = refresh }
        all["title"] = title
        all["version"] = version
        all["node"] = node
        if let signedIn = context.console {
            all["operator"] = signedIn.operatorName
            all["csrf"] = signedIn.csrfToken
        }
        if let hub { all["hub"] = hub }
        if let nav { all["nav" + nav] = true }
        if let notice { all["notice"] = notice }
        if let error { all["error"] = error }
        let html = library.render(all, withTemplate: template) ?? "template \(template) is missing"
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// The error page for `error`, with its status.
    func error(_ error: any Error, context: AppRequestContext, hub: String? = nil) -> Response {
        let (status, heading, message): (HTTPResponse.Status, String, String)
        switch (HeraldError(reporting: error), error) {
        case (let error?, _):
            status = .init(code: error.code.httpStatus)
            heading = status == .notFound ? "Not found" : "That did not work"
            message = error.message
        case (nil, let error as Throttled):
            status = error.status
            heading = error.code == .tooManyRequests ? "Too many attempts" : "Busy"
            message = error.message
        case (nil, let error as HTTPError):
            status = error.status
            heading = error.status.reasonPhrase
            message = error.body ?? error.status.reasonPhrase
        default:
            status = .internalServerError
            heading = "Something went wrong"
            message = "The server could not do that; its log has the details."
        }
        return page("error", title: heading, ["heading": heading, "message": message], context: context, hub: hub, status: status)
    }

    /// 303 to `location`, after a form was handled.
    static func redirect(_ location: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = securityHeaders
        headers[.location] = location
        headers.append(contentsOf: extra)
        return Response(status: .seeOther, headers: headers)
    }

    /// JSON for the console's script.
    static func json(_ value: some Encodable) throws -> Response {
        var headers = securityHeaders
        headers[.contentType] = "application/json"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// The fields of a URL-encoded form or query (`+` is a space); the first of repeated names wins.
    static func form(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String {
                part.percentDecoded(plusIsSpace: true) ?? ""
            }
            let name = decode(parts[0])
            guard !name.isEmpty, fields[name] == nil else { continue }
            fields[name] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }

    /// A query string of `fields` (empty values left out), for links.
    /// Where a page of a history starts: after the `before` of its link, or at the newest;
    /// `400` for a damaged link.
    static func historyCursor(_ fields: [String: String]) throws -> NotificationHistoryCursor? {
        guard let token = fields["before"] else { return nil }
        guard let cursor = NotificationHistoryCursor(token: token) else { throw HeraldError.badRequest("that page link is damaged") }
        return cursor
    }

    static func query(_ fields: [(String, String?)]) -> String {
        let pairs = fields.compactMap { name, value -> String? in
            guard let value, !value.isEmpty else { return nil }
            return "\(name)=\(segment(value))"
        }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }

    /// Percent-encodes all but RFC 3986's unreserved characters: a path segment (a hub name,
    /// an id) or a query value.
    static func segment(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    /// ASCII letters and digits and `-._~` (`CharacterSet.alphanumerics` would let other
    /// scripts' letters through unencoded).
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `2026-11-25 14:03:07 UTC`, and the ISO 8601 form for `datetime` attributes.
    static func date(_ date: Date?) -> String {
        guard let date else { return "—" }
        return date.formatted(
            .iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon).dateTimeSeparator(.space)) + " UTC"
    }

    static func iso(_ date: Date?) -> String {
        date?.formatted(.iso8601) ?? ""
    }

    /// A duration in words: `850 ms`, `12.4 s`, `3 min 5 s`, `2 h 4 min`.
    static func duration(_ seconds: Double) -> String {
        switch seconds {
        case ..<1: return "\(Int((seconds * 1000).rounded())) ms"
        case ..<60: return String(format: "%.1f s", seconds)
        case ..<3600: return "\(Int(seconds) / 60) min \(Int(seconds) % 60) s"
        default: return "\(Int(seconds) / 3600) h \(Int(seconds) % 3600 / 60) min"
        }
    }

    /// How an outcome reads: `good` (delivered), `bad` (not delivered), `neutral` (skipped).
    static func tone(_ outcome: DeliveryOutcome) -> String {
        switch outcome {
        case .success: "good"
        case .skipped: "neutral"
        default: "bad"
        }
    }

    /// A long handle shortened for a table cell (its whole value goes in a `title`).
    static func short(_ handle: String) -> String {
        handle.count > 40 ? String(handle.prefix(24)) + "…" + String(handle.suffix(12)) : handle
    }
}
