import HeraldCore
import Logging

extension WNSProvider: HTTPPushService {
    var serviceName: String { "WNS" }

    /// `X-WNS-Status`, lowercased. The rest of the answer is in the headers too; WNS sends
    /// no body worth reading.
    func answer(to response: HTTPPushResponse) -> WNSStatus? {
        response.header("x-wns-status").map { WNSStatus($0.lowercased()) }
    }

    func classify(_ response: HTTPPushResponse, answer wnsStatus: WNSStatus?, retryAfter: Double?) -> PushResult {
        Self.classify(
            status: response.status,
            wnsStatus: wnsStatus,
            errorDescription: response.header("x-wns-error-description"),
            retryAfter: retryAfter
        )
    }

    func metadata(_ response: HTTPPushResponse, answer wnsStatus: WNSStatus?) -> Logger.Metadata {
        [
            "wns.status": "\(response.status)",
            "wns.notification_status": "\(wnsStatus?.rawValue ?? "")",
            "wns.device_connection_status": "\(response.header("x-wns-deviceconnectionstatus") ?? "")",
            "wns.msg_id": "\(response.header("x-wns-msg-id") ?? "")",
        ]
    }
}
