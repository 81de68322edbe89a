public import Hummingbird
public import NIOCore

/// The request context of Herald's routes: Hummingbird's core storage, the client's address
/// and the signed-in user.
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The authenticated user name, set by ``UserAuthenticator``.
    public var user: String?
    /// The console's signed-in operator, set by ``ConsoleAuthenticator``.
    var console: ConsoleSignedIn?
    /// The console request's form fields (its URL-encoded body), read by ``ConsoleAuthenticator``.
    var consoleForm: [String: String] = [:]
    /// The address of the connection's peer (a proxy's, behind one).
    public let remoteAddress: SocketAddress?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.user = nil
        self.console = nil
        self.remoteAddress = source.channel.remoteAddress
    }

    /// The client's IP address, for logs; `unknown` when there is none (tests that call the
    /// router directly).
    var clientAddress: String {
        remoteAddress?.ipAddress ?? "unknown"
    }

    /// The key the per-client limits count this client under (``SocketAddress/clientKey``: an
    /// IPv6 client by its /64).
    var clientKey: String {
        SocketAddress.clientKey(remoteAddress)
    }

    /// Request bodies Herald decodes are small JSON documents.
    public var maxUploadSize: Int { 64 * 1024 }

    /// The signed-in user; throws 401 on a route the authenticator did not guard.
    func requireUser() throws -> String {
        guard let user else { throw HTTPError(.unauthorized) }
        return user
    }
}
