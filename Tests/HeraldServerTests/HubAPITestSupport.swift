import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldServer
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

// Support for the wire-level tests of the hub REST API (`HubAPI*Tests`): raw HTTP requests with
// hand-made bodies and hand-made shared access signatures, made the way each hub SDK makes
// them, and a small XML reader of the answers that keeps element order and CDATA. Nothing
// here uses Herald's own signer, writer or parser, so the tests check the wire, not the code.

// MARK: - Shared access signatures as the SDKs make them

/// How one hub SDK builds the `Authorization` header: which URL it signs (`sr`), how it
/// percent-encodes, and in which order it writes the parameters.
enum SDKSignature: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The .NET SDK: the request URL lowercased, scheme `http`, port and query dropped, a
    /// trailing `/`, encoded like `HttpUtility.UrlEncode` (lowercase hex).
    case dotNet
    /// The JavaScript SDK: the namespace URL (`https://host:port/`), `encodeURIComponent`.
    case javaScript
    /// The Python REST sample: `https://host:port/{hub}`, quoted then lowercased, parameters
    /// in the order `sig, se, skn, sr`.
    case python
    /// The iOS SDK: the full request URL with its `?api-version`, `https` made `http`,
    /// encoded, then lowercased.
    case iOS

    var testDescription: String { rawValue }

    /// The header this SDK sends for a request to `url` (scheme, host, port, path, query) of
    /// the hub `hub`, signed with `key` of the rule `keyName`, valid until `expiry` (seconds
    /// since 1970).
    func header(url: String, hub: String, keyName: String, key: String, expiry: Int) -> String {
        let parts = WireURL(url)
        let se = String(expiry)
        switch self {
        case .dotNet:
            var path = parts.path
            if !path.hasSuffix("/") { path += "/" }
            let sr = Self.formEncoded("http://\(parts.host)\(path)".lowercased())
            let sig = Self.sign(sr, se, key: key)
            return "SharedAccessSignature sr=\(sr)&sig=\(Self.formEncoded(sig))&se=\(se)&skn=\(Self.formEncoded(keyName))"
        case .javaScript:
            let sr = Self.uriComponentEncoded("https://\(parts.authority)/")
            let sig = Self.sign(sr, se, key: key)
            return "SharedAccessSignature sr=\(sr)&sig=\(Self.uriComponentEncoded(sig))&se=\(se)&skn=\(Self.uriComponentEncoded(keyName))"
        case .python:
            let sr = Self.quoted("https://\(parts.authority)/\(hub)", safe: "").lowercased()
            let sig = Self.sign(sr, se, key: key)
            return "SharedAccessSignature sig=\(Self.quoted(sig, safe: "/"))&se=\(se)&skn=\(keyName)&sr=\(sr)"
        case .iOS:
            let audience = url.lowercased().replacingOccurrences(of: "https://", with: "http://")
            let sr = Self.quoted(audience, safe: "").lowercased()
            let sig = Self.sign(sr, se, key: key)
            return "SharedAccessSignature sr=\(sr)&sig=\(Self.quoted(sig, safe: ""))&se=\(se)&skn=\(keyName)"
        }
    }

    /// base64(HMAC-SHA256(UTF-8 of the key as written, `sr + "\n" + se`)).
    static func sign(_ sr: String, _ se: String, key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(sr)\n\(se)".utf8), using: SymmetricKey(data: Data(key.utf8)))
        return Data(mac).base64EncodedString()
    }

    /// Percent-encodes every byte of `text` except ASCII letters, digits and `unreserved`.
    static func percentEncoded(_ text: String, unreserved: String, lowercaseHex: Bool, spaceAsPlus: Bool = false) -> String {
        let keep = Set(unreserved.utf8)
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                result.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: " ") where spaceAsPlus:
                result.append("+")
            case _ where keep.contains(byte):
                result.append(Character(Unicode.Scalar(byte)))
            default:
                let hex = String(byte, radix: 16, uppercase: !lowercaseHex)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }

    /// `HttpUtility.UrlEncode`: lowercase hex, `+` for a space.
    static func formEncoded(_ text: String) -> String {
        percentEncoded(text, unreserved: "-_.!*()", lowercaseHex: true, spaceAsPlus: true)
    }

    /// JavaScript's `encodeURIComponent`.
    static func uriComponentEncoded(_ text: String) -> String {
        percentEncoded(text, unreserved: "-_.!~*'()", lowercaseHex: false)
    }

    /// Python's `urllib.parse.quote(text, safe)` (and the iOS SDK's encoder with `safe: ""`).
    static func quoted(_ text: String, safe: String) -> String {
        percentEncoded(text, unreserved: "-_.~" + safe, lowercaseHex: false)
    }
}

/// The parts of an absolute URL the signers need.
struct WireURL {
    /// `host:port` as written.
    var authority: String
    /// The host without the port.
    var host: String
    /// The path, `/` at least.
    var path: String
    /// `path?query` as written.
    var pathAndQuery: String

    init(_ url: String) {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        let slash = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        authority = String(rest[..<slash])
        host = authority.split(separator: ":", maxSplits: 1).first.map(String.init) ?? authority
        var tail = String(rest[slash...])
        if !tail.hasPrefix("/") { tail = "/" + tail }
        pathAndQuery = tail
        path = tail.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
    }
}

// MARK: - Raw requests

/// A response as it came off the socket.
struct WireResponse: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The first value of a header, by name in any case.
    func header(_ name: String) -> String? { headers.first(name: name) }

    /// The body as XML.
    func xml(sourceLocation: SourceLocation = #_sourceLocation) throws -> WireXML {
        do {
            return try WireXML.parse(body)
        } catch {
            Issue.record("the body is not XML (status \(status)): \(text.prefix(400))", sourceLocation: sourceLocation)
            throw error
        }
    }

    /// The body as a JSON value.
    func json() throws -> Any { try JSONSerialization.jsonObject(with: body) }
}

extension WireResponse {
    /// A response of the router test framework.
    init(_ response: TestResponse) {
        var headers = HTTPHeaders()
        for field in response.headers { headers.add(name: field.name.rawName, value: field.value) }
        self.init(status: Int(response.status.code), headers: headers, body: Data(response.body.readableBytesView))
    }
}

/// The methods of the hub API.
enum WireMethod: String, Sendable {
    case GET, POST, PUT, PATCH, DELETE
}

/// What a raw request carries in `Authorization`.
enum WireAuth: Sendable {
    /// No header at all.
    case none
    /// A token signed as `style` signs, with a key of `rule` of the test hub.
    case rule(String, SharedAccessRule.KeySlot = .primary, style: SDKSignature = .dotNet)
    /// This header value as it is.
    case header(String)

    static let full = WireAuth.rule(SharedAccessRule.defaultFullRuleName)
    static let listen = WireAuth.rule(SharedAccessRule.defaultListenRuleName)
}

extension HubTestServer {
    static let apiVersion = "api-version=2020-06"
    static let registrationNamespace = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
    static let instanceNamespace = "http://www.w3.org/2001/XMLSchema-instance"
    static let atomNamespace = "http://www.w3.org/2005/Atom"

    /// The plain listener, `http://127.0.0.1:{port}`.
    var baseURL: String { "http://127.0.0.1:\(httpPort)" }

    /// The key of a rule of the test hub as the catalog has it now (rules added during a test
    /// included).
    func key(_ rule: String, _ slot: SharedAccessRule.KeySlot = .primary) async throws -> String {
        let definition = try #require(try await catalog.hub(named: Self.hubName))
        return try #require(definition.rule(named: rule), "the test hub has no rule \(rule)").key(slot)
    }

    /// A token for `url` signed with `key` as `style` signs, valid for an hour unless told.
    func token(
        _ style: SDKSignature = .dotNet,
        url: String,
        hub: String = HubTestServer.hubName,
        keyName: String,
        key: String,
        expiry: Int = Int(Date().timeIntervalSince1970) + 3600
    ) -> String {
        style.header(url: url, hub: hub, keyName: keyName, key: key, expiry: expiry)
    }

    /// Sends one request over a real socket to the plain listener. `target` is a path with its
    /// query (`/testhub/messages?api-version=…`) or a full URL (a `Location` or a next link).
    func wire(
        _ method: WireMethod,
        _ target: String,
        headers: [(String, String)] = [],
        body: Data? = nil,
        streamed: Bool = false,
        auth: WireAuth = .full
    ) async throws -> WireResponse {
        let url = target.hasPrefix("http") ? target : baseURL + target
        var request = HTTPClientRequest(url: url)
        request.method = NIOHTTP1.HTTPMethod(rawValue: method.rawValue)
        switch auth {
        case .none:
            break
        case .rule(let rule, let slot, let style):
            await request.headers.add(name: "Authorization", value: token(style, url: url, keyName: rule, key: try key(rule, slot)))
        case .header(let value):
            request.headers.add(name: "Authorization", value: value)
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body, streamed {
            // Chunked, with no Content-Length: the server learns the size as the bytes come.
            let pieces = stride(from: 0, to: body.count, by: 256 * 1024).map { ByteBuffer(bytes: body[$0..<min(body.count, $0 + 256 * 1024)]) }
            request.body = .stream(pieces.async, length: .unknown)
        } else if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await httpClient.execute(request, timeout: .seconds(60))
        let collected = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return WireResponse(status: Int(response.status.code), headers: response.headers, body: Data(collected.readableBytesView))
    }

    // MARK: Registrations

    /// `POST /{hub}/registrationids`: the new id, read from `Location` the way the SDKs read it
    /// (the fourth segment of the path).
    func newRegistrationID(auth: WireAuth = .full, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let response = try await wire(.POST, "/\(Self.hubName)/registrationids?\(Self.apiVersion)", auth: auth)
        try #require(response.status == 201, "POST registrationids: \(response.status) \(response.text)", sourceLocation: sourceLocation)
        let location = try #require(response.header("Location"), sourceLocation: sourceLocation)
        return try Self.lastSegment(of: location, under: "registrationids", sourceLocation: sourceLocation)
    }

    /// `PUT /{hub}/registrations/{id}` with an Atom entry around `description`.
    func putRegistration(
        id: String,
        _ description: String,
        ifMatch: String? = nil,
        auth: WireAuth = .full
    ) async throws -> WireResponse {
        var headers = [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")]
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        return try await wire(.PUT, "/\(Self.hubName)/registrations/\(id)?\(Self.apiVersion)", headers: headers, body: Atom.entry(description), auth: auth)
    }

    /// An id from `registrationids`, then a `PUT` of `description` with it; requires 200.
    func createRegistration(
        _ description: String,
        auth: WireAuth = .full,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (id: String, response: WireResponse) {
        let id = try await newRegistrationID(auth: auth, sourceLocation: sourceLocation)
        let response = try await putRegistration(id: id, description, auth: auth)
        try #require(response.status == 200, "PUT registrations/\(id): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        return (id, response)
    }

    // MARK: Sends

    /// `POST /{hub}/messages` with a format, optional tags and more headers.
    func send(
        format: String?,
        _ body: String,
        tags: String? = nil,
        query: String = "",
        headers: [(String, String)] = [],
        auth: WireAuth = .full
    ) async throws -> WireResponse {
        var all = headers
        if let format { all.append(("ServiceBusNotification-Format", format)) }
        if let tags { all.append(("ServiceBusNotification-Tags", tags)) }
        if !all.contains(where: { $0.0.lowercased() == "content-type" }) {
            all.append(("Content-Type", "application/json;charset=utf-8"))
        }
        return try await wire(.POST, "/\(Self.hubName)/messages?\(Self.apiVersion)\(query)", headers: all, body: Data(body.utf8), auth: auth)
    }

    /// The notification id of an accepted send: `201` and `Location: …/{hub}/messages/{id}`.
    func acceptedID(_ response: WireResponse, under kind: String = "messages", sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(response.status == 201, "send: \(response.status) \(response.text)", sourceLocation: sourceLocation)
        let location = try #require(response.header("Location"), "a send answers with a Location", sourceLocation: sourceLocation)
        return try Self.lastSegment(of: location, under: kind, sourceLocation: sourceLocation)
    }

    /// `GET /{hub}/messages/{id}` until the notification is no longer enqueued or in progress.
    func finishedDetails(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> WireXML {
        for _ in 0..<600 {
            let response = try await wire(.GET, "/\(Self.hubName)/messages/\(id)?\(Self.apiVersion)")
            try #require(response.status == 200, "GET messages/\(id): \(response.status) \(response.text)", sourceLocation: sourceLocation)
            let details = try response.xml(sourceLocation: sourceLocation)
            if let state = details.value("State"), !["Enqueued", "Processing"].contains(state) { return details }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("notification \(id) never finished")
    }

    /// `id` of `…/{hub}/{kind}/{id}?…`: the path must have exactly those three segments, as the
    /// JavaScript SDK splits it.
    static func lastSegment(of location: String, under kind: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let path = WireURL(location).path
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        try #require(
            segments.count == 4 && segments[0].isEmpty && segments[1] == hubName && segments[2] == kind && !segments[3].isEmpty,
            "Location \(location) is not …/\(hubName)/\(kind)/{id}",
            sourceLocation: sourceLocation
        )
        return segments[3]
    }
}

/// Atom wrapping and XML escaping for hand-made registration bodies.
enum Atom {
    /// `<entry xmlns="…Atom"><content type="application/xml">{description}</content></entry>`.
    static func entry(_ description: String) -> Data {
        Data(
            #"<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">\#(description)</content></entry>"#
                .utf8)
    }

    /// The five XML escapes, for values put into a hand-made document.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&apos;")
    }

    /// The opening tag of a registration description, with both namespaces as the SDKs write them.
    static func open(_ name: String) -> String {
        #"<\#(name) xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">"#
    }
}

// MARK: - Errors

/// Checks that `response` is the hub's error answer: `status`, an XML content type and the
/// body `<Error><Code>{status}</Code><Detail>…</Detail></Error>`. Returns the detail.
@discardableResult
func expectHubError(_ response: WireResponse, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation) -> String {
    #expect(response.status == status, "expected \(status): \(response.status) \(response.text.prefix(400))", sourceLocation: sourceLocation)
    let contentType = response.header("Content-Type") ?? ""
    #expect(contentType.lowercased().hasPrefix("application/xml"), "error content type \(contentType)", sourceLocation: sourceLocation)
    guard let error = try? WireXML.parse(response.body) else {
        Issue.record("the error body is not XML: \(response.text.prefix(400))", sourceLocation: sourceLocation)
        return ""
    }
    #expect(error.name == "Error", sourceLocation: sourceLocation)
    #expect(error.childNames == ["Code", "Detail"], sourceLocation: sourceLocation)
    #expect(error.value("Code") == String(status), sourceLocation: sourceLocation)
    let detail = error.value("Detail") ?? ""
    #expect(detail.contains("TrackingId:"), "Detail: \(detail)", sourceLocation: sourceLocation)
    return detail
}

// MARK: - XML as it came

/// An element as written on the wire: qualified names (`a:etag`, `xmlns:i`) as they are,
/// children in document order, text and whether it came as CDATA.
struct WireXML: Sendable {
    var name: String
    var attributes: [String: String]
    var children: [WireXML]
    var text: String
    var hasCDATA: Bool

    var childNames: [String] { children.map(\.name) }

    func child(_ name: String) -> WireXML? { children.first { $0.name == name } }

    func children(_ name: String) -> [WireXML] { children.filter { $0.name == name } }

    /// The text of the child `name`.
    func value(_ name: String) -> String? { child(name)?.text }

    /// The element at a path of child names.
    func at(_ path: String...) -> WireXML? {
        var element: WireXML? = self
        for name in path { element = element?.child(name) }
        return element
    }

    static func parse(_ data: Data) throws -> WireXML {
        let parser = XMLParser(data: data)
        let builder = WireXMLBuilder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        guard parser.parse(), let root = builder.root else {
            throw TestFailure("malformed XML: \(parser.parserError.map { "\($0)" } ?? "no root element")")
        }
        return root
    }
}

private final class WireXMLBuilder: NSObject, XMLParserDelegate {
    var stack: [WireXML] = []
    var root: WireXML?

    func parser(
        _ parser: XMLParser,
        didStartElement elementName: String,
        namespaceURI: String?,
        qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        stack.append(WireXML(name: qName ?? elementName, attributes: attributeDict, children: [], text: "", hasCDATA: false))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard let element = stack.popLast() else { return }
        if stack.isEmpty {
            root = element
        } else {
            stack[stack.count - 1].children.append(element)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
        stack[stack.count - 1].hasCDATA = true
    }
}

// MARK: - The hub API through the router

extension TestHerald {
    /// A Herald with the hub API and the hub ``HubTestServer/hubName``, configured by
    /// `configure`, tested through `.router` (no socket): for server settings
    /// ``HubTestServer`` does not expose, such as the hub API's rate limit.
    static func withHubAPIRouter<T: Sendable>(
        configure: @escaping (inout ServerConfiguration) -> Void,
        _ body: @escaping @Sendable (HubDefinition, any TestClientProtocol) async throws -> T
    ) async throws -> T {
        try await withHerald(configure: configure) { herald in
            var logger = Logger(label: "test.hub")
            logger.logLevel = .warning
            let definition = try await herald.catalog.create(name: HubTestServer.hubName)
            let application = buildApplication(
                hubs: herald.registry, devices: herald.devices, appStore: herald.store, configuration: herald.server, logger: logger
            )
            let outcome: Result<T, any Error> = try await application.test(.router) { client in
                do {
                    return .success(try await body(definition, client))
                } catch {
                    return .failure(error)
                }
            }
            return try outcome.get()
        }
    }
}
