import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldHubWire
import Hummingbird
import Logging

/// Confirmed receipts (Herald's extension of the hub API, Listen right, as a device's own
/// calls are):
///
/// - `POST /{hub}/receipts` `{"notificationId": "<herald.id>", "installationId": "<id>"}` →
///   `204`: the installation's device received the notification. Instead of
///   `installationId`, `"platform"` (an installation's platform name) and `"pushChannel"` name
///   a registration's device; instead of `notificationId`, `"notificationIds": […]` confirms
///   up to 1,000 at once.
///
/// A device counts once per notification: a repeat is answered `204` too and changes nothing.
/// `404` for an unknown device or notification, which records nothing.
extension HubAPIController {
    @Sendable func confirmReceipt(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .listen)
        let body = try await request.decodeJSONBody(context: context)
        let ids = try ReceiptBody.notificationIDs(in: body)
        let sender: HubEngine.ReceiptSender
        switch (try ReceiptBody.string("installationId", in: body), try ReceiptBody.string("pushChannel", in: body)) {
        case (let installation?, nil):
            sender = .installation(id: installation)
        case (nil, let channel?):
            guard let platformName = try ReceiptBody.string("platform", in: body) else {
                throw HeraldError.badRequest("a pushChannel goes with its platform: apns, fcmv1, wns or browser")
            }
            sender = .pushChannel(try Installation.wirePlatform(platformName).platform, channel)
        case (.some, .some):
            throw HeraldError.badRequest("name the device by installationId or by platform and pushChannel, not both")
        case (nil, nil):
            throw HeraldError.badRequest("name the device that received it: installationId, or platform and pushChannel")
        }
        let new = try await engine.confirm(ids, from: sender)
        context.logger.debug("Receipt recorded", metadata: ["herald.receipts.new": "\(new)"])
        return Response(status: .noContent)
    }
}
