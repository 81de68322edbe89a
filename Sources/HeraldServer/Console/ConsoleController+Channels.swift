import Foundation
import HeraldCore
import HeraldHub
import HeraldPush
import HeraldStore
import Hummingbird
import Logging

/// A hub's APNs broadcast channels: listed, created and deleted at APNs with the hub's APNs
/// credentials (as the hub REST API's `/{hub}/broadcastchannels` does), and per channel a
/// broadcast form and the channel's sends with what APNs answered each.
extension ConsoleController {
    static let broadcastsPerPage = 25

    func addChannelRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("hubs/:hub/channels", use: channelsPage)
        group.post("hubs/:hub/channels", use: createChannel)
        group.get("hubs/:hub/channels/:channel", use: channelPage)
        group.post("hubs/:hub/channels/:channel/broadcast", use: broadcastToChannel)
        group.post("hubs/:hub/channels/:channel/delete", use: deleteChannel)
    }

    /// A Live Activity update to start a broadcast from, stamped now.
    static func sampleBroadcast(at date: Date = Date()) -> String {
        #"{"aps":{"timestamp":\#(Int(date.timeIntervalSince1970)),"event":"update","content-state":{"status":"A test from the Herald console"}}}"#
    }

    private static func channelsBase(_ hub: String) -> String {
        "/console/hubs/\(ConsolePages.segment(hub))/channels"
    }

    /// The hub's engine and the channel id the path names.
    private func engineAndChannel(_ name: String, _ context: AppRequestContext) async throws -> (HubEngine, String) {
        let (_, engine) = try await definitionAndEngine(name)
        return (engine, try BroadcastChannelSegment.channelID(try context.parameters.require("channel")))
    }

    @Sendable func channelsPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            var values: [String: Any] = [:]
            do {
                let ids = try await engine.apnsProvider().channelIDs()
                values["channels"] = ids.sorted().map { ["hub": name, "id": $0, "segment": BroadcastChannelSegment.segment($0)] }
            } catch let error as HeraldError where error.code == .unavailable {
                values["unavailable"] = error.message
            }
            return pages.page("channels", title: "Broadcast channels", values, context: context, hub: name, nav: "Channels", notice: notice(request))
        }
    }

    @Sendable func createChannel(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            guard let policy = Int(context.consoleForm["policy"] ?? "0"), policy == 0 || policy == 1 else {
                throw HeraldError.badRequest("the message storage policy is 0 (no storage) or 1 (the most recent message)")
            }
            let id = try await engine.apnsProvider().createChannel(messageStoragePolicy: policy)
            audit("created a broadcast channel", context, hub: name)
            return ConsolePages.redirect("\(Self.channelsBase(name))/\(BroadcastChannelSegment.segment(id))?done=channel-created")
        }
    }

    @Sendable func channelPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (engine, id) = try await engineAndChannel(name, context)
            let policy = try await engine.apnsProvider().channelStoragePolicy(id: id)
            let fields = ConsolePages.form(request.uri.query ?? "")
            let cursor = try ConsolePages.historyCursor(fields)
            let page = try await engine.broadcasts(toChannel: id, before: cursor, limit: Self.broadcastsPerPage + 1)
            let shown = page.prefix(Self.broadcastsPerPage)
            let segment = BroadcastChannelSegment.segment(id)
            var values: [String: Any] = [
                "id": id, "segment": segment,
                "policy": policy == 1 ? "1: APNs stores the most recent message for an offline device" : "0: none",
                "payload": Self.sampleBroadcast(),
                "sends": shown.map { record -> [String: Any] in
                    let outcome = record.broadcastOutcome
                    return [
                        "hub": name, "id": record.id, "sent": ConsolePages.date(record.enqueuedAt), "sentISO": ConsolePages.iso(record.enqueuedAt),
                        "outcome": outcome?.rawValue ?? record.state.rawValue, "tone": outcome.map(ConsolePages.tone) ?? "neutral",
                    ]
                },
            ]
            let base = "\(Self.channelsBase(name))/\(segment)"
            if page.count > Self.broadcastsPerPage, let last = shown.last {
                values["older"] = base + ConsolePages.query([("before", NotificationHistoryCursor(after: last).token)])
            }
            if cursor != nil { values["first"] = base }
            return pages.page("channel", title: "Broadcast channel", values, context: context, hub: name, nav: "Channels", notice: notice(request))
        }
    }

    @Sendable func broadcastToChannel(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (engine, id) = try await engineAndChannel(name, context)
            let payload = try Self.payload(platform: .apns, text: context.consoleForm["payload"] ?? "")
            let priority: SendRequest.Priority = context.consoleForm["priority"] == "5" ? .normal : .high
            let record = try await engine.broadcast(payload, toChannel: id, options: SendRequest.Options(priority: priority))
            audit("broadcast to a channel", context, hub: name, ["herald.notification.id": "\(record.id)"])
            return ConsolePages.redirect("\(Self.channelsBase(name))/\(BroadcastChannelSegment.segment(id))?done=broadcast")
        }
    }

    @Sendable func deleteChannel(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (engine, id) = try await engineAndChannel(name, context)
            try await engine.apnsProvider().deleteChannel(id: id)
            audit("deleted a broadcast channel", context, hub: name)
            return ConsolePages.redirect("\(Self.channelsBase(name))?done=channel-deleted")
        }
    }
}
