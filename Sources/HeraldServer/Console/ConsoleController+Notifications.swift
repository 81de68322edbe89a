import Foundation
import HeraldCore
import HeraldHub
import HeraldStore
import Hummingbird
import Logging

/// Notifications: a hub's history with states and outcome counts, one notification's
/// outcomes per platform and progress over time, scheduled sends with cancel, and a
/// read-only view of the delivery queue.
extension ConsoleController {
    static let notificationsPerPage = 50

    func addNotificationRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("hubs/:hub/notifications", use: notificationsPage)
        group.get("hubs/:hub/notifications/:id", use: notificationPage)
        group.post("hubs/:hub/notifications/:id/cancel", use: cancelNotification)
        group.get("hubs/:hub/queue", use: queuePage)
    }

    private static func target(_ record: NotificationRecord) -> String {
        if let channel = record.broadcastChannel { return "broadcast channel \(channel)" }
        if record.directTargets != nil { return "direct to handles" }
        return record.tagExpression ?? "every device"
    }

    private static func platforms(_ record: NotificationRecord) -> String {
        if let template = record.template { return "template \(template.templateName ?? "(any)")" }
        return record.platforms.map(\.rawValue).sorted().joined(separator: ", ")
    }

    @Sendable func notificationsPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            let fields = ConsolePages.form(request.uri.query ?? "")
            let state = fields["state"].flatMap { $0.isEmpty ? nil : $0 }
            var states: Set<NotificationState>?
            if let state {
                guard let parsed = NotificationState(rawValue: state) else { throw HeraldError.badRequest("\(state) is not a notification state") }
                states = [parsed]
            }
            let cursor = try ConsolePages.historyCursor(fields)
            let page = try await engine.notificationHistory(states: states, before: cursor, limit: Self.notificationsPerPage + 1)
            let shown = page.prefix(Self.notificationsPerPage)
            let scheduled = try await engine.notificationHistory(states: [.scheduled], limit: 100)
            var values: [String: Any] = [
                "states": NotificationState.allCases.map { ["value": $0.rawValue, "selected": $0.rawValue == state] },
                "scheduled": scheduled.reversed().map { listing -> [String: Any] in
                    let record = listing.record
                    return [
                        "hub": name, "id": record.id, "target": Self.target(record), "platforms": Self.platforms(record),
                        "due": ConsolePages.date(record.scheduledAt), "dueISO": ConsolePages.iso(record.scheduledAt),
                    ]
                },
                "history": shown.map { listing -> [String: Any] in
                    let record = listing.record
                    let succeeded = record.counts.counts.values.reduce(0) { $0 + ($1[.success] ?? 0) }
                    let skipped = record.counts.counts.values.reduce(0) { $0 + ($1[.skipped] ?? 0) }
                    return [
                        "hub": name, "id": record.id, "state": record.state.rawValue, "target": Self.target(record),
                        "accepted": ConsolePages.date(record.enqueuedAt), "acceptedISO": ConsolePages.iso(record.enqueuedAt),
                        "succeeded": succeeded, "failed": record.counts.total - succeeded - skipped,
                    ]
                },
            ]
            let base = "/console/hubs/\(ConsolePages.segment(name))/notifications"
            if page.count > Self.notificationsPerPage, let last = shown.last {
                values["older"] = base + ConsolePages.query([("state", state), ("before", NotificationHistoryCursor(after: last).token)])
            }
            if cursor != nil { values["first"] = base + ConsolePages.query([("state", state)]) }
            return pages.page("notifications", title: "Notifications", values, context: context, hub: name, nav: "Notifications", notice: notice(request))
        }
    }

    @Sendable func notificationPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub"), id = try context.parameters.require("id")
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            guard let record = try await engine.notification(id: id) else {
                throw HeraldError.notFound("there is no notification \(id) in \(name)")
            }
            let running = !record.state.isFinal && record.state != .scheduled
            // The devices' receipts, beside the push service's outcomes of each platform.
            let confirmed = try await engine.confirmedCounts(notificationID: record.id)
            let platforms = Set(record.counts.counts.keys).union(confirmed.keys).sorted { $0.rawValue < $1.rawValue }
            var values: [String: Any] = [
                "id": record.id, "state": record.state.rawValue, "target": Self.target(record),
                "platforms": Self.platforms(record), "accepted": ConsolePages.date(record.enqueuedAt),
                "total": record.counts.total, "running": running, "cancellable": record.state == .scheduled,
                "outcomes": platforms.flatMap { platform in
                    var rows = (record.counts.counts[platform] ?? [:]).sorted { $0.value > $1.value }.map { outcome, count -> [String: Any] in
                        ["platform": platform.rawValue, "outcome": outcome.rawValue, "tone": ConsolePages.tone(outcome), "count": count]
                    }
                    if let count = confirmed[platform] {
                        rows.append(["platform": platform.rawValue, "outcome": Receipt.outcomeName, "tone": ConsolePages.tone(.success), "count": count])
                    }
                    return rows
                },
            ]
            if let due = record.scheduledAt { values["due"] = ConsolePages.date(due) }
            if let started = record.startedAt {
                values["started"] = ConsolePages.date(started)
                values["waited"] = ConsolePages.duration(max(0, started.timeIntervalSince(record.scheduledAt ?? record.enqueuedAt)))
                let end = record.endedAt ?? Date()
                let seconds = end.timeIntervalSince(started)
                if seconds > 0, record.counts.total > 0 { values["rate"] = Int((Double(record.counts.total) / seconds).rounded()) }
            }
            if let ended = record.endedAt, let started = record.startedAt ?? Optional(record.enqueuedAt) {
                values["ended"] = ConsolePages.date(ended)
                values["took"] = ConsolePages.duration(max(0, ended.timeIntervalSince(started)))
            }
            let samples = engine.deliveryLog.progress(notificationID: record.id)
            if samples.count > 1, let first = samples.first, let last = samples.last {
                let platforms = Set(samples.flatMap(\.perPlatform.keys)).sorted { $0.rawValue < $1.rawValue }
                let chart = ConsoleChart(
                    lines: platforms.map { platform in
                        .init(name: platform.rawValue, values: samples.map { Double($0.perPlatform[platform] ?? 0) })
                    },
                    from: "+0 s", to: "+" + ConsolePages.duration(last.at.timeIntervalSince(first.at)), unit: "devices",
                    summary: "Devices reached per platform over time: \(last.reached) after \(ConsolePages.duration(last.at.timeIntervalSince(first.at)))"
                )
                values["progress"] = chart.svg()
            }
            let notice = ConsolePages.form(request.uri.query ?? "")["done"] == "sent" ? "The notification is accepted." : self.notice(request)
            return pages.page(
                "notification", title: "Notification \(id)", values, context: context, hub: name, nav: "Notifications",
                notice: notice, refresh: running || record.state == .enqueued ? 3 : nil
            )
        }
    }

    @Sendable func cancelNotification(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub"), id = try context.parameters.require("id")
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            guard try await engine.cancelScheduled(id: id) else {
                throw HeraldError.notFound("there is no notification \(id) in \(name)")
            }
            audit("cancelled a scheduled notification", context, hub: name, ["herald.notification.id": "\(id)"])
            return ConsolePages.redirect("/console/hubs/\(ConsolePages.segment(name))/notifications?done=cancelled")
        }
    }

    @Sendable func queuePage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            let statistics = try await engine.queueStatistics()
            let entries = try await engine.queueEntries(limit: 200)
            let values: [String: Any] = [
                "waiting": statistics.waiting, "processing": statistics.processing,
                "oldest": statistics.oldestWaitingSince.map { ConsolePages.duration(max(0, Date().timeIntervalSince($0))) } ?? "—",
                "entries": entries.map { listing -> [String: Any] in
                    let record = listing.record
                    return [
                        "hub": name, "notification": record.partOf ?? record.id, "part": record.partOf == nil ? "" : record.id,
                        "state": record.state.rawValue, "owner": listing.leaseOwner.map(Self.node) ?? "—",
                        "total": record.counts.total, "accepted": ConsolePages.date(record.enqueuedAt),
                        "leaseUntil": listing.leaseUntil.map { ConsolePages.date($0) } ?? "—",
                    ]
                },
            ]
            return pages.page("queue", title: "Queue", values, context: context, hub: name, nav: "Queue", refresh: 5)
        }
    }

    /// The node part of a lease owner (`node/host:pid:random`).
    static func node(_ owner: String) -> String {
        owner.split(separator: "/").first.map(String.init) ?? owner
    }
}
