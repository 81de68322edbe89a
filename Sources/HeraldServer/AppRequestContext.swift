public import Hummingbird

/// The request context of Herald's routes: Hummingbird's core storage and the signed-in user.
public struct AppRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The authenticated user name, set by ``UserAuthenticator``.
    public var user: String?

    public init(source: Source) {
        self.coreContext = .init(source: source)
        self.user = nil
    }

    /// Request bodies Herald decodes are small JSON documents.
    public var maxUploadSize: Int { 64 * 1024 }

    /// The signed-in user; throws 401 on a route the authenticator did not guard.
    func requireUser() throws -> String {
        guard let user else { throw HTTPError(.unauthorized) }
        return user
    }
}
