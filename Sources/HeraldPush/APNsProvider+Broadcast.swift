import Foundation
public import HeraldCore
import Logging
import NIOCore
import NIOHPACK

extension APNsProvider {
    /// Creates a broadcast channel for the provider's topic (`POST /1/apps/{bundle id}/channels`
    /// on ``APNsConfiguration/broadcastManagementEndpoint``) and returns its id (base64).
    ///
    /// - Parameter messageStoragePolicy: 0 (no message is stored for an offline device) or 1
    ///   (the most recent one is).
    /// - Throws: ``HeraldError``: `400` for a policy other than 0 or 1 and what APNs refuses
    ///   as a bad request, `403` when APNs refuses the credentials, `503` when it cannot be
    ///   reached.
    public func createChannel(messageStoragePolicy: Int) async throws(HeraldError) -> String {
        guard messageStoragePolicy == 0 || messageStoragePolicy == 1 else {
            throw .badRequest("a channel's message storage policy is 0 (no storage) or 1 (the most recent message), not \(messageStoragePolicy)")
        }
        let body = #"{"message-storage-policy":\#(messageStoragePolicy),"push-type":"LiveActivity"}"#
        let response = try await manage("POST", "/channels", body: ByteBuffer(string: body))
        guard let id = response.header("apns-channel-id"), !id.isEmpty else {
            throw .unavailable("APNs created a channel but named none (no apns-channel-id)")
        }
        return id
    }

    /// The ids of the provider's topic's channels (`GET /1/apps/{bundle id}/all-channels`).
    public func channelIDs() async throws(HeraldError) -> [String] {
        struct List: Decodable { var channels: [String] }
        let response = try await manage("GET", "/all-channels")
        guard let body = response.body, let list = try? JSONDecoder().decode(List.self, from: Data(body.readableBytesView)) else {
            throw .unavailable("APNs answered the channel list with a body that is not {\"channels\": […]}")
        }
        return list.channels
    }

    /// The message storage policy of channel `id`; `404` when APNs does not know it.
    public func channelStoragePolicy(id: String) async throws(HeraldError) -> Int {
        struct Configuration: Decodable {
            var messageStoragePolicy: Int
            enum CodingKeys: String, CodingKey { case messageStoragePolicy = "message-storage-policy" }
        }
        let response = try await manage("GET", "/channels", channelID: id)
        guard let body = response.body,
            let read = try? JSONDecoder().decode(Configuration.self, from: Data(body.readableBytesView))
        else {
            throw .unavailable("APNs answered the channel with a body that is not {\"message-storage-policy\": …}")
        }
        return read.messageStoragePolicy
    }

    /// Deletes channel `id`; `404` when APNs does not know it.
    public func deleteChannel(id: String) async throws(HeraldError) {
        _ = try await manage("DELETE", "/channels", channelID: id)
    }

    /// Sends `notification` to every device subscribed to broadcast channel `channelID` in one
    /// request: `POST /4/broadcasts/apps/{bundle id}` on ``APNsConfiguration/endpoint`` with
    /// `apns-channel-id`. The notification's `apns-*` headers go with it, but for
    /// `apns-topic` (a broadcast names its app in the path); `apns-push-type` is
    /// `liveactivity`, `apns-priority` defaults to 10 and `apns-expiration` to 0.
    public func broadcast(_ notification: PushNotification, channelID: String) async -> PushResult {
        guard case .bytes(let body) = notification.body else {
            return .rejectedLocally(.invalidNotificationFormat, reason: "APNs notifications need a byte body")
        }
        guard !client.isShutDown else { return .unreachable(reason: "provider shut down") }
        let providerToken: APNsProviderToken?
        do {
            providerToken = try await currentProviderToken()
        } catch {
            tokenSigningFailed()
            return .rejectedLocally(.invalidCredentials, reason: "token signing failed")
        }
        var fields = HPACKHeaders()
        if let providerToken { fields.add(name: "authorization", value: providerToken.authorization) }
        fields.add(name: "apns-channel-id", value: channelID)
        var present: Set<String> = []
        for header in notification.headers where header.name.hasCaseInsensitivePrefix("apns-") {
            let name = header.name.lowercased()
            guard name != "apns-topic", name != "apns-channel-id" else { continue }
            guard Self.isValidFieldName(name), Self.isValidFieldValue(header.value), Self.isValidFieldValue(channelID) else {
                return .rejectedLocally(.invalidNotificationFormat, reason: "an apns-* header is not a valid HTTP field")
            }
            present.insert(name)
            fields.add(name: name, value: header.value)
        }
        if !present.contains("apns-push-type") { fields.add(name: "apns-push-type", value: "liveactivity") }
        if !present.contains("apns-priority") { fields.add(name: "apns-priority", value: "10") }
        if !present.contains("apns-expiration") { fields.add(name: "apns-expiration", value: "0") }
        var headers = client.headerBlock(path: basePath + "/4/broadcasts/apps/" + configuration.topic, reservingCapacity: fields.count)
        headers.add(contentsOf: fields)
        let response: HTTP2Client.Response
        do {
            response = try await client.send(headerBlock: headers, body: body, deadline: .now() + timeout)
        } catch {
            logger.debug("APNs broadcast failed without a response", metadata: ["error": "\(error)"])
            return .unreachable()
        }
        return result(of: response, providerToken: providerToken, handle: channelID)
    }

    /// One request to the broadcast management API for the provider's topic; a status other
    /// than 200 and 201 is thrown as a ``HeraldError`` with APNs' reason.
    private func manage(
        _ method: String, _ suffix: String, channelID: String? = nil, body: ByteBuffer? = nil
    ) async throws(HeraldError) -> HTTP2Client.Response {
        if let channelID {
            guard !channelID.isEmpty, Self.isValidFieldValue(channelID), Data(base64Encoded: channelID) != nil else {
                throw .badRequest("a channel id is the base64 text APNs gave when the channel was created")
            }
        }
        let authorization: String?
        do {
            authorization = try await currentProviderToken()?.authorization
        } catch {
            tokenSigningFailed()
            throw .unavailable("the APNs provider token of key \(configuration.keyID) could not be signed")
        }
        var headers = managementClient.headerBlock(
            method: method, path: managementPath + "/1/apps/" + configuration.topic + suffix, reservingCapacity: 3)
        if let authorization { headers.add(name: "authorization", value: authorization) }
        if let channelID { headers.add(name: "apns-channel-id", value: channelID) }
        if body != nil { headers.add(name: "content-type", value: "application/json") }
        let response: HTTP2Client.Response
        do {
            response = try await managementClient.send(headerBlock: headers, body: body, deadline: .now() + timeout)
        } catch {
            logger.debug("APNs broadcast management request failed without a response", metadata: ["error": "\(error)"])
            throw .unavailable("the APNs broadcast management endpoint could not be reached")
        }
        guard response.status != 200, response.status != 201, response.status != 204 else { return response }
        struct ErrorBody: Decodable { var reason: String? }
        let reason = response.body.flatMap { try? JSONDecoder().decode(ErrorBody.self, from: Data($0.readableBytesView)) }?.reason ?? ""
        let said = "APNs answered \(response.status) \(reason)"
        switch (response.status, reason) {
        case (_, "ChannelNotRegistered"), (404, _): throw .notFound("no such channel: \(said)")
        case (400, _), (413, _): throw .badRequest(said)
        case (403, _): throw .forbidden("APNs refused the hub's credentials for broadcast channels: \(said)")
        case (429, _): throw .tooManyRequests(said)
        default: throw .unavailable(said)
        }
    }
}
