import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldStore
import Hummingbird
import Logging
import NIOCore

/// The Herald console at `/console`: web pages for operators to run the server's hubs from
/// (hubs and keys, devices, test sends, notifications and the queue, charts). Pages are
/// rendered on the server from embedded templates; a small embedded script adds copying,
/// confirmations and checks as you type. See ``ConsoleAuthenticator`` for who may do what.
struct ConsoleController {
    let hubs: HubRegistry
    let operators: ConsoleOperators
    let pages: ConsolePages
    let history: ConsoleHistory?
    /// The endpoint of the connection strings shown (`sb://host:port/`); `nil` when TLS is off
    /// and none is set.
    let hubEndpoint: String?
    /// Whether the console is served over TLS (its cookies are then `Secure`).
    let secure: Bool
    let logger: Logger

    static let signInCookie = "herald_console_signin"

    func addRoutes(to router: Router<AppRequestContext>) {
        let console = router.group("console")
        console.get { _, _ in ConsolePages.redirect("/console/hubs") }
        console.get("assets/console.css") { _, _ in asset(PackageResources.console_css, type: "text/css; charset=utf-8") }
        console.get("assets/console.js") { _, _ in asset(PackageResources.console_js, type: "text/javascript; charset=utf-8") }
        console.get("sign-in", use: signInPage)
        console.post("sign-in", use: signIn)

        let signedIn = console.group().add(middleware: ConsoleAuthenticator(operators: operators, pages: pages))
        signedIn.post("sign-out", use: signOut)
        signedIn.get("password") { _, context in
            pages.page("password", title: "Choose your password", ["mustChange": context.console?.mustChangePassword ?? false], context: context)
        }
        signedIn.post("password", use: changePassword)
        signedIn.get("hubs", use: hubList)
        signedIn.post("hubs", use: createHub)
        signedIn.get("hubs/:hub", use: hubPage)
        signedIn.post("hubs/:hub/delete", use: deleteHub)
        signedIn.post("hubs/:hub/keys/:rule", use: revealKeys)
        signedIn.post("hubs/:hub/keys/:rule/rotate", use: rotateKey)
        addDeviceRoutes(to: signedIn)
        addSendRoutes(to: signedIn)
        addNotificationRoutes(to: signedIn)
        addChannelRoutes(to: signedIn)
    }

    private func asset(_ bytes: [UInt8], type: String) -> Response {
        var headers = ConsolePages.securityHeaders
        headers[.contentType] = type
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// Runs a page's work; a failure shows the error page instead.
    func handling(_ context: AppRequestContext, hub: String? = nil, _ work: () async throws -> Response) async -> Response {
        do {
            return try await work()
        } catch {
            if HeraldError(reporting: error) == nil && !(error is HTTPError) {
                logger.error("Console request failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            return pages.error(error, context: context, hub: hub)
        }
    }

    func cookie(_ name: String, _ value: String, maxAge: Int) -> Cookie {
        Cookie(name: name, value: value, maxAge: maxAge, path: "/console", secure: secure, httpOnly: true, sameSite: .strict)
    }

    // MARK: Signing in and out

    /// The sign-in form, with a token that its cookie must match (so no other site can sign a
    /// browser in to an account of its choosing).
    @Sendable func signInPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        signInForm(context: context)
    }

    private func signInForm(context: AppRequestContext, name: String = "", error: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        let token = PasswordHasher.randomToken()
        var response = pages.page("sign-in", title: "Sign in", ["signInToken": token, "name": name], context: context, status: status, error: error)
        response.setCookie(cookie(Self.signInCookie, token, maxAge: 3600))
        return response
    }

    @Sendable func signIn(_ request: Request, context: AppRequestContext) async throws -> Response {
        var request = request
        let form = ConsolePages.form(String(buffer: try await request.collectBody(upTo: 16 * 1024)))
        let name = form["name"] ?? "", password = form["password"] ?? ""
        guard let expected = request.cookies[Self.signInCookie]?.value,
            ConsoleAuthenticator.same(form["csrf"] ?? "", expected), ConsoleAuthenticator.sameOrigin(request)
        else {
            return signInForm(context: context, name: name, error: "The sign-in form expired. Please try again.", status: .forbidden)
        }
        do {
            guard let (token, _, found) = try await operators.signIn(name: name, password: password, client: context.clientKey) else {
                logger.notice("Console sign-in failed", metadata: ["herald.client": "\(context.clientAddress)"])
                return signInForm(context: context, name: name, error: "Wrong operator name or password.", status: .unauthorized)
            }
            logger.notice("Console sign-in", metadata: ["herald.operator": "\(found.name)"])
            var response = ConsolePages.redirect(found.mustChangePassword ? "/console/password" : "/console/hubs")
            response.setCookie(cookie(ConsoleAuthenticator.cookieName, token, maxAge: Int(operators.sessionLifetime)))
            response.setCookie(cookie(Self.signInCookie, "", maxAge: 0))
            return response
        } catch let throttled as Throttled {
            var response = signInForm(context: context, name: name, error: throttled.message, status: throttled.status)
            response.headers[.retryAfter] = "\(throttled.retryAfterSeconds)"
            return response
        }
    }

    @Sendable func signOut(_ request: Request, context: AppRequestContext) async throws -> Response {
        if let signedIn = context.console {
            try await operators.signOut(token: signedIn.token)
            logger.notice("Console sign-out", metadata: ["herald.operator": "\(signedIn.operatorName)"])
        }
        var response = ConsolePages.redirect("/console/sign-in")
        response.setCookie(cookie(ConsoleAuthenticator.cookieName, "", maxAge: 0))
        return response
    }

    @Sendable func changePassword(_ request: Request, context: AppRequestContext) async throws -> Response {
        guard let signedIn = context.console else { throw HTTPError(.unauthorized) }
        do {
            try await operators.changePassword(
                name: signedIn.operatorName, current: context.consoleForm["current"] ?? "", new: context.consoleForm["new"] ?? "",
                keeping: signedIn.token, client: context.clientKey
            )
        } catch let error as HeraldError {
            return pages.page(
                "password", title: "Choose your password", ["mustChange": signedIn.mustChangePassword], context: context, status: .badRequest,
                error: error.message)
        } catch let throttled as Throttled {
            var response = pages.page(
                "password", title: "Choose your password", ["mustChange": signedIn.mustChangePassword], context: context, status: throttled.status,
                error: throttled.message
            )
            response.headers[.retryAfter] = "\(throttled.retryAfterSeconds)"
            return response
        }
        logger.notice("Console password changed", metadata: ["herald.operator": "\(signedIn.operatorName)"])
        return ConsolePages.redirect("/console/hubs?done=password")
    }

    // MARK: Hubs

    static let notices = [
        "password": "Your password is saved.",
        "created": "The hub is created.",
        "deleted": "The hub is deleted.",
        "rotated": "The key is rotated: clients with the old one must get the new connection string.",
        "device-deleted": "The device is deleted.",
        "cancelled": "The scheduled notification is cancelled.",
        "channel-created": "The channel is created at APNs.",
        "channel-deleted": "The channel is deleted at APNs.",
        "broadcast": "The broadcast is sent: APNs' answer is below.",
    ]

    func notice(_ request: Request) -> String? {
        ConsolePages.form(request.uri.query ?? "")["done"].flatMap { Self.notices[$0] }
    }

    @Sendable func hubList(_ request: Request, context: AppRequestContext) async throws -> Response {
        await handling(context) {
            var rows: [[String: Any]] = []
            for definition in try await hubs.catalog.list() {
                let engine = try await hubs.engine(for: definition)
                let statistics = try await engine.queueStatistics()
                rows.append([
                    "name": definition.name,
                    "devices": try await engine.registrationCount(),
                    "waiting": statistics.waiting,
                    "created": ConsolePages.date(definition.createdAt),
                    "createdISO": ConsolePages.iso(definition.createdAt),
                ])
            }
            return pages.page("hubs", title: "Hubs", ["hubs": rows, "charts": charts(hub: nil)], context: context, nav: "Hubs", notice: notice(request))
        }
    }

    @Sendable func createHub(_ request: Request, context: AppRequestContext) async throws -> Response {
        await handling(context) {
            let name = (context.consoleForm["name"] ?? "").trimmingSpaces()
            let created = try await hubs.catalog.create(name: name)
            _ = try await hubs.engine(for: created)
            audit("created a hub", context, hub: created.name)
            return ConsolePages.redirect("/console/hubs/\(ConsolePages.segment(created.name))?done=created")
        }
    }

    @Sendable func deleteHub(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            guard context.consoleForm["confirm"] == name else {
                throw HeraldError.badRequest("type the hub's name, \(name), to confirm that it is to be deleted")
            }
            try await hubs.catalog.delete(name: name)
            audit("deleted a hub", context, hub: name)
            return ConsolePages.redirect("/console/hubs?done=deleted")
        }
    }

    @Sendable func hubPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub")
        return await handling(context, hub: name) {
            let (definition, engine) = try await definitionAndEngine(name)
            let statistics = try await engine.queueStatistics()
            let perPlatform = try await engine.registrationCountsByPlatform()
            let rules = definition.rules.enumerated().map { index, rule -> [String: Any] in
                [
                    "name": rule.name, "index": index,
                    "rights": rule.sortedRights.map(\.rawValue).joined(separator: ", "),
                    "slots": SharedAccessRule.KeySlot.allCases.map { ["slot": $0.rawValue, "index": index] },
                ]
            }
            let values: [String: Any] = [
                "devices": perPlatform.values.reduce(0, +),
                "platformCounts": Platform.allCases.compactMap { platform in
                    perPlatform[platform].map { ["platform": platform.rawValue, "count": $0] }
                },
                "waiting": statistics.waiting,
                "processing": statistics.processing,
                "created": ConsolePages.date(definition.createdAt),
                "createdISO": ConsolePages.iso(definition.createdAt),
                "credentials": try await credentials(definition.name),
                "rules": rules,
                "charts": charts(hub: definition.name),
            ]
            return pages.page("hub", title: definition.name, values, context: context, hub: definition.name, nav: "Hub", notice: notice(request))
        }
    }

    /// The keys and connection strings of one rule, for the page's script (a POST, so that it
    /// carries the CSRF token). Every view is logged, without the keys.
    @Sendable func revealKeys(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub"), ruleName = try context.parameters.require("rule")
        let (definition, _) = try await definitionAndEngine(name)
        guard let rule = definition.rule(named: ruleName) else { throw HTTPError(.notFound) }
        guard let endpoint = hubEndpoint else {
            throw HTTPError(.conflict, message: "TLS is off and no hub endpoint is set (HERALD_HUB_ENDPOINT)")
        }
        audit("viewed access keys", context, hub: name, ["herald.rule": "\(rule.name)"])
        var keys: [String: String] = [:]
        for slot in SharedAccessRule.KeySlot.allCases {
            keys["\(slot.rawValue)ConnectionString"] = ConnectionString(endpoint: endpoint, keyName: rule.name, key: rule.key(slot)).description
        }
        return try ConsolePages.json(keys)
    }

    @Sendable func rotateKey(_ request: Request, context: AppRequestContext) async throws -> Response {
        let name = try context.parameters.require("hub"), rule = try context.parameters.require("rule")
        return await handling(context, hub: name) {
            guard let slot = context.consoleForm["slot"].flatMap(SharedAccessRule.KeySlot.init(rawValue:)) else {
                throw HeraldError.badRequest("say which key to rotate: primary or secondary")
            }
            _ = try await hubs.catalog.rotate(name: name, rule: rule, key: slot)
            audit("rotated a key", context, hub: name, ["herald.rule": "\(rule)", "herald.key": "\(slot.rawValue)"])
            return ConsolePages.redirect("/console/hubs/\(ConsolePages.segment(name))?done=rotated")
        }
    }

    // MARK: Shared pieces

    /// The hub's definition and open engine; 404 if there is no such hub.
    func definitionAndEngine(_ name: String) async throws -> (HubDefinition, HubEngine) {
        guard let definition = try await hubs.catalog.hub(named: name) else {
            throw HeraldError.notFound("there is no hub \(name)")
        }
        return (definition, try await hubs.engine(for: definition))
    }

    /// The charts of a hub's deliveries (or every hub's, with the push services' latency).
    func charts(hub: String?) -> [String: Any] {
        guard let history else { return ["enabled": false] }
        var values: [String: Any] = [
            "enabled": true,
            "deliveries": history.deliveriesChart(hub: hub).svg(),
            "interval": Int(history.interval.components.seconds),
            "since": ConsolePages.date(history.started),
        ]
        if hub == nil { values["latency"] = history.latencyChart().svg() } else { values["scope"] = hub }
        return values
    }

    /// Logs what an operator did (never a key, token or payload).
    func audit(_ action: String, _ context: AppRequestContext, hub: String, _ extra: Logger.Metadata = [:]) {
        var metadata: Logger.Metadata = ["herald.operator": "\(context.console?.operatorName ?? "-")", "herald.hub": "\(hub)"]
        metadata.merge(extra) { $1 }
        logger.notice("Console: \(action)", metadata: metadata)
    }
}
