import HeraldCore
public import Hummingbird

/// `GET /api/notifications/{id}`: what a secure or rich notification announced, fetched the
/// way the tutorials' device code does (`GET {backend}/api/notifications/%d` with its
/// credentials).
///
/// - the id of a secure payload → `{"Id", "Payload", "Read"}` (``SecurePushController``);
/// - the id of rich content → its bytes with their `Content-Type` (``RichPushController``).
///
/// Only the user it was sent to may read it (and, for rich content, its uploader). Anyone else,
/// an unknown, an expired and a malformed id all get the same 404. Which of the two an id names
/// is in the id itself (``ContentID``).
public struct ContentController: Sendable {
    let secure: SecurePushController
    let rich: RichPushController

    /// The one answer to every id the caller may not read.
    static let notFound = HeraldError.notFound("no such notification")

    public init(secure: SecurePushController, rich: RichPushController) {
        self.secure = secure
        self.rich = rich
    }

    public func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("notifications/{id}", use: fetch)
    }

    @Sendable func fetch(request: Request, context: AppRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try context.parameters.require("id")
        for kind in ContentID.kinds(of: id) {
            let response =
                switch kind {
                case .secure: try await secure.read(id: id, user: user, context: context)
                case .rich: try await rich.read(id: id, user: user, context: context)
                }
            if let response { return response }
        }
        throw Self.notFound
    }
}
