import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// Guards the console's pages: a request needs a live session cookie, and one that changes
/// anything (every method but GET and HEAD) also needs the session's CSRF token, in the
/// `csrf` form field or the `X-CSRF-Token` header, and no `Origin` but the console's own.
///
/// Without a session, a page request is sent to sign in and anything else gets 401. An
/// operator who still has a one-time password can only choose a new one or sign out.
struct ConsoleAuthenticator: RouterMiddleware {
    typealias Context = AppRequestContext
    let operators: ConsoleOperators
    let pages: ConsolePages

    static let cookieName = "herald_console"
    static let csrfHeader = HTTPField.Name("X-CSRF-Token")!
    /// The largest console form read (a test send's payload is at most a few KB).
    static let maxFormBytes = 64 * 1024

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let reading = request.method == .get || request.method == .head
        guard let token = request.cookies[Self.cookieName]?.value,
            let (session, found) = try await operators.session(token: token)
        else {
            if reading { return ConsolePages.redirect("/console/sign-in") }
            return pages.error(HTTPError(.unauthorized, message: "Sign in to the console first."), context: context)
        }
        context.console = ConsoleSignedIn(
            operatorName: found.name, csrfToken: session.csrfToken, token: token, mustChangePassword: found.mustChangePassword
        )
        var request = request
        if !reading {
            let body = try await request.collectBody(upTo: Self.maxFormBytes)
            context.consoleForm = ConsolePages.form(String(buffer: body))
            let given = request.headers[Self.csrfHeader] ?? context.consoleForm["csrf"] ?? ""
            guard Self.same(given, session.csrfToken), Self.sameOrigin(request) else {
                return pages.error(
                    HTTPError(
                        .forbidden,
                        message: "The request did not come from this console's own page (its CSRF token is missing or wrong). Reload the page and try again."),
                    context: context)
            }
        }
        if found.mustChangePassword, !["/console/password", "/console/sign-out"].contains(request.uri.path) {
            if reading { return ConsolePages.redirect("/console/password") }
            return pages.error(HTTPError(.forbidden, message: "Choose your own password first."), context: context)
        }
        return try await next(request, context)
    }

    /// Compares two tokens in constant time (their digests).
    static func same(_ given: String, _ expected: String) -> Bool {
        SHA256.hash(data: Data(given.utf8)) == SHA256.hash(data: Data(expected.utf8))
    }

    /// A browser's `Origin` (when it sends one) names the host the request went to.
    static func sameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        guard let host = request.head.authority, let url = URL(string: origin), let originHost = url.host else {
            return false
        }
        let port = url.port.map { ":\($0)" } ?? ""
        return (originHost + port).lowercased() == host.lowercased()
    }
}
