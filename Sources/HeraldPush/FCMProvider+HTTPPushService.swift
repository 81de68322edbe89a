import Foundation
import HeraldCore
import Logging
import NIOCore

extension FCMProvider: HTTPPushService {
    var serviceName: String { "FCM" }

    /// The error code of a response that is not a 200: `error.details[].errorCode`, else
    /// `error.status`. A 200's body (the message name) is not read.
    func answer(to response: HTTPPushResponse) -> FCMErrorCode? {
        guard response.status != 200, let body = response.body else { return nil }
        return Self.errorCode(fromBody: Data(body.readableBytesView))
    }

    /// `THIRD_PARTY_AUTH_ERROR` is about the APNs or web push credentials behind FCM, which a
    /// new access token does not change.
    func mayBeStaleCredential(_ errorCode: FCMErrorCode?) -> Bool {
        errorCode != .thirdPartyAuthError
    }

    func classify(_ response: HTTPPushResponse, answer errorCode: FCMErrorCode?, retryAfter: Double?) -> PushResult {
        Self.classify(status: response.status, errorCode: errorCode, retryAfter: retryAfter)
    }

    func metadata(_ response: HTTPPushResponse, answer errorCode: FCMErrorCode?) -> Logger.Metadata {
        ["fcm.status": "\(response.status)", "fcm.error_code": "\(errorCode?.rawValue ?? "")"]
    }
}
