import Foundation
import HeraldCore
import HeraldHub
import HeraldStore
import Hummingbird
import Logging

/// The devices browser: a hub's registrations (those of installations too), filtered by tag
/// expression, user, platform and handle prefix, a page at a time with the store's keyset
/// cursor; one device's tags, template and recent outcomes; deleting one.
extension ConsoleController {
    static let devicesPerPage = 50

    /// A path parameter as it was before it was percent-encoded into a link (a registration id
    /// may hold `$`, `:` or `{}`).
    static func decoded(_ parameter: String) -> String {
        parameter.percentDecoded() ?? parameter
    }

    func addDeviceRoutes(to group: RouterGroup<AppRequestContext>) {
        group.get("hubs/:hub/devices", use: devicesPage)
        group.get("hubs/:hub/devices/:id", use: devicePage)
        group.post("hubs/:hub/devices/:id/delete", use: deleteDevice)
        group.post("hubs/:hub/installations/:id/delete", use: deleteInstallation)
    }

    /// The filter of the browser's query string: the tag expression and the user are
    /// combined with `&&` (a user is the tag `username:NAME` the app backend gives its devices).
    static func deviceQuery(_ fields: [String: String]) throws -> RegistrationQuery {
        var parts: [String] = []
        if let expression = fields["expression"]?.trimmingSpaces(), !expression.isEmpty {
            parts.append("(\(expression))")
        }
        if let user = fields["user"]?.trimmingSpaces(), !user.isEmpty {
            guard (try? Tag.validate("username:" + user)) != nil else { throw HeraldError.badRequest("\(user) is not a user name") }
            parts.append("username:" + user)
        }
        var query = RegistrationQuery()
        if !parts.isEmpty {
            query.expression = try ConsoleController.parse(parts.joined(separator: " && ")).expression
        }
        if let platform = fields["platform"], !platform.isEmpty {
            query.platform = try Platform(parsing: platform)
        }
        if let handle = fields["handle"], !handle.isEmpty { query.handlePrefix = handle }
        return query
    }

    @Sendable func devicesPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            let fields = ConsolePages.form(request.uri.query ?? "")
            let filter: [(String, String?)] = ["expression", "user", "platform", "handle"].map { ($0, fields[$0]) }
            var values: [String: Any] = [
                "expression": fields["expression"] ?? "", "user": fields["user"] ?? "", "handle": fields["handle"] ?? "",
                "platforms": Platform.allCases.map { ["value": $0.rawValue, "label": $0.rawValue, "selected": fields["platform"] == $0.rawValue] },
                "filtered": filter.contains { !($0.1 ?? "").isEmpty },
            ]
            let query: RegistrationQuery
            do {
                query = try Self.deviceQuery(fields)
            } catch let error as HeraldError {
                values["count"] = 0
                values["countNoun"] = "devices"
                return pages.page("devices", title: "Devices", values, context: context, hub: name, nav: "Devices", status: .badRequest, error: error.message)
            }
            let count = try await engine.countRegistrations(query)
            let page = try await engine.browseRegistrations(query, after: fields["after"], limit: Self.devicesPerPage + 1)
            let shown = page.prefix(Self.devicesPerPage)
            values["count"] = count
            values["countNoun"] = count == 1 ? "device" : "devices"
            values["devices"] = shown.map { registration -> [String: Any] in
                var row: [String: Any] = [
                    "hub": name, "id": registration.id, "path": ConsolePages.segment(registration.id), "platform": registration.platform.rawValue,
                    "handle": registration.handle, "handleShort": ConsolePages.short(registration.handle),
                    "tags": registration.tags, "template": registration.template != nil,
                    "updated": ConsolePages.date(registration.updatedAt), "updatedISO": ConsolePages.iso(registration.updatedAt),
                ]
                if let installation = registration.installationID { row["installation"] = installation }
                return row
            }
            let base = "/console/hubs/\(ConsolePages.segment(name))/devices"
            if page.count > Self.devicesPerPage, let last = shown.last {
                values["next"] = base + ConsolePages.query(filter + [("after", last.id)])
            }
            if fields["after"] != nil { values["first"] = base + ConsolePages.query(filter) }
            return pages.page("devices", title: "Devices", values, context: context, hub: name, nav: "Devices", notice: notice(request))
        }
    }

    @Sendable func devicePage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub"), id = try Self.decoded(context.parameters.require("id"))
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            guard let registration = try await engine.registration(id: id) else {
                throw HeraldError.notFound("there is no device with the registration id \(id) in \(name)")
            }
            var values: [String: Any] = [
                "id": registration.id, "path": ConsolePages.segment(registration.id),
                "platform": registration.platform.rawValue, "handle": registration.handle,
                "tags": registration.tags,
                "created": ConsolePages.date(registration.createdAt), "updated": ConsolePages.date(registration.updatedAt),
                "expires": registration.expiresAt.map { ConsolePages.date($0) } ?? "never",
                "outcomes": engine.deliveryLog.outcomes(registrationID: registration.id).map { entry -> [String: Any] in
                    [
                        "hub": name, "notification": entry.notificationID, "outcome": entry.outcome.rawValue, "tone": ConsolePages.tone(entry.outcome),
                        "at": ConsolePages.date(entry.at), "atISO": ConsolePages.iso(entry.at),
                    ]
                },
            ]
            if let installation = registration.installationID {
                values["installation"] = installation
                values["installationPath"] = ConsolePages.segment(installation)
            }
            if let template = registration.template {
                values["template"] = template.body
                values["headers"] = template.headers.map { ["name": $0.name, "value": $0.value] }
            }
            return pages.page("device", title: "Device \(id)", values, context: context, hub: name, nav: "Devices")
        }
    }

    @Sendable func deleteDevice(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub"), id = try Self.decoded(context.parameters.require("id"))
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            guard try await engine.deleteRegistration(id: id) else {
                throw HeraldError.notFound("there is no device with the registration id \(id) in \(name)")
            }
            audit("deleted a registration", context, hub: name, ["herald.registration.id": "\(id)"])
            return ConsolePages.redirect("/console/hubs/\(ConsolePages.segment(name))/devices?done=device-deleted")
        }
    }

    @Sendable func deleteInstallation(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub"), id = try Self.decoded(context.parameters.require("id"))
        return await handling(context, hub: name) {
            let (_, engine) = try await definitionAndEngine(name)
            guard try await engine.deleteInstallation(id: id) else {
                throw HeraldError.notFound("there is no installation \(id) in \(name)")
            }
            audit("deleted an installation", context, hub: name, ["herald.installation.id": "\(id)"])
            return ConsolePages.redirect("/console/hubs/\(ConsolePages.segment(name))/devices?done=device-deleted")
        }
    }
}
