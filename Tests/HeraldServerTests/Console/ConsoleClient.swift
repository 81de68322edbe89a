import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// A browser, as far as the console's tests need one: it keeps cookies, reads the CSRF token of
/// the last page, and posts forms.
final class ConsoleClient: @unchecked Sendable {
    let client: any TestClientProtocol
    var cookies: [String: String] = [:]
    /// The `csrf` field of the last page read.
    var csrf: String?
    var lastBody = ""

    init(_ client: any TestClientProtocol) {
        self.client = client
    }

    struct Page {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: String
        var location: String? { headers[.location] }
    }

    @discardableResult
    func get(_ path: String, headers extra: HTTPFields = [:]) async throws -> Page {
        try await send(path, method: .get, headers: extra, body: nil)
    }

    /// Posts `fields`, with the page's CSRF token unless `csrf` says otherwise (`""`: none).
    @discardableResult
    func post(_ path: String, _ fields: [String: String] = [:], csrf override: String? = nil, headers extra: HTTPFields = [:]) async throws -> Page {
        var fields = fields
        let token = override ?? csrf ?? ""
        if !token.isEmpty { fields["csrf"] = token }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
        var headers = extra
        headers[.contentType] = "application/x-www-form-urlencoded"
        return try await send(path, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    private func send(_ path: String, method: HTTPRequest.Method, headers extra: HTTPFields, body: ByteBuffer?) async throws -> Page {
        var headers = extra
        if !cookies.isEmpty, headers[.cookie] == nil {
            headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        }
        let response = try await client.execute(uri: path, method: method, headers: headers, body: body)
        for header in response.headers[values: .setCookie] {
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            let name = String(pair[0]), value = pair.count > 1 ? String(pair[1]) : ""
            if value.isEmpty || header.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = value }
        }
        let text = String(buffer: response.body)
        if let range = text.range(of: #"name="csrf" value=""#) {
            csrf = String(text[range.upperBound...].prefix { $0 != "\"" })
        }
        lastBody = text
        return Page(status: response.status, headers: response.headers, body: text)
    }

    /// Signs in as `name`: the answer to the form, after which the page it leads to is read
    /// (for its CSRF token), as a browser would.
    func signIn(_ name: String, _ password: String) async throws -> Page {
        try await get("/console/sign-in")
        let answer = try await post("/console/sign-in", ["name": name, "password": password])
        if answer.status == .seeOther, let location = answer.location { try await get(location) }
        return answer
    }
}
