public import HeraldCore

/// What the app backend asks of the hub that keeps its users' devices: the device registry
/// seen by signed-in users, and sends that wait for their outcome.
///
/// A hub's engine (``HubEngine``) answers it with one atomic store operation per rule. A hub
/// reached through the hub REST API (`HubAPIUserDevices`) answers it as well as that API
/// allows.
public protocol UserDevices: Sendable {
    /// The platforms this hub delivers to: what a notify without `pns` is rendered for.
    var platforms: Set<Platform> { get }

    /// The registration id `user`'s device should use: with a `handle`, the user's own
    /// registration of that handle, if there is one (the user's other registrations of it,
    /// duplicates, are deleted); otherwise a newly issued id, valid for a first save.
    func registrationID(handle: String?, user: String) async throws -> String

    /// Creates or replaces `user`'s registration. One device, one registration: the other
    /// registrations of its platform and handle, whoever made them, are deleted.
    ///
    /// - Throws: ``HeraldError`` `forbidden` if the registration belongs to another user,
    ///   `gone` if its id was never issued (or expired, or was deleted): the device asks for a
    ///   new one.
    func saveRegistration(_ registration: Registration, user: String) async throws -> Registration

    /// Deletes `user`'s registration.
    ///
    /// - Throws: ``HeraldError`` `notFound` if there is none, `forbidden` if it belongs to
    ///   another user.
    func deleteRegistration(id: String, user: String) async throws

    /// Records that `user`'s registration `registrationID` received the notifications
    /// `notificationIDs` (see ``Receipt``); a repeat changes nothing.
    ///
    /// - Throws: ``HeraldError`` `notFound` if the registration is not the user's, or a
    ///   notification is unknown.
    func confirm(_ notificationIDs: [String], registrationID: String, user: String) async throws

    /// Sends (the app backend's sends are to a user, ``SendRequest/Target/user(_:)``, with
    /// native payloads) and waits up to `wait` for delivery to end; returns the notification as
    /// it is then, with its outcome counts (and for a send repeated under its idempotency key,
    /// the first one's notification, with ``SendResult/replay``).
    func send(_ request: SendRequest, wait: Duration) async throws -> SendResult
}
