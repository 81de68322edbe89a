/// No credential could be had for a send: ``result`` is what the send reports.
struct PushAuthorizationFailure: Error, Sendable {
    var result: PushResult
}
