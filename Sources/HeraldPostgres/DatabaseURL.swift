import Foundation
public import HeraldCore

/// Where the PostgreSQL database is, as a libpq connection URL:
/// `postgres://user:password@host:5432/database?sslmode=require`.
///
/// Accepted: the schemes `postgres` and `postgresql`; user and password percent-encoded; a
/// host name, an IPv4 address or a bracketed IPv6 one (default `localhost`); a port (default
/// 5432); a database (default: the user name); and the parameters `sslmode` (`disable`,
/// `prefer` — the default —, `require`, `verify-ca`, `verify-full`), `sslrootcert` (a PEM file
/// of the CAs to trust instead of the system's, for a server with a certificate of a private
/// CA; with `require`, the chain is then verified, as libpq does), `host` (a Unix socket
/// directory, as libpq reads it), `application_name` and `connect_timeout` (seconds). Any other
/// parameter is refused rather than silently ignored.
///
/// Only `verify-full` checks that the server is the one named: use it (with `sslrootcert` for
/// a private CA) whenever the database is reached over a network.
///
/// The password never appears in ``description`` (nor in any error this type throws), so a
/// URL can be logged.
public struct DatabaseURL: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// How the connection uses TLS, as libpq's `sslmode` says it.
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Never TLS.
        case disable
        /// TLS if the server offers it, certificate verified if used.
        case prefer
        /// TLS, certificate not verified (libpq's `require`).
        case require
        /// TLS, certificate chain verified, host name not.
        case verifyCA = "verify-ca"
        /// TLS, certificate chain and host name verified.
        case verifyFull = "verify-full"
    }

    public var username: String
    public var password: String?
    /// A host name or address; `nil` with ``socketDirectory``.
    public var host: String?
    public var port: Int
    /// The directory of the server's Unix socket (`?host=/run/postgresql`).
    public var socketDirectory: String?
    public var database: String
    public var tlsMode: TLSMode
    /// A PEM file of the CAs that issue the server's certificate (`sslrootcert`); `nil` trusts
    /// the system's.
    public var rootCertificateFile: String?
    public var applicationName: String?
    public var connectTimeout: Duration?

    /// Parses a connection URL.
    ///
    /// - Throws: ``HeraldError`` (`badRequest`) saying what is wrong, never quoting the password.
    public init(_ string: String) throws(HeraldError) {
        let trimmed = string.trimmingSpaces()
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased() else {
            throw .badRequest("the database URL is not a URL; expected postgres://user:password@host:5432/database")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw .badRequest("the database URL must start with postgres:// or postgresql://, not \(scheme)://")
        }
        guard let user = components.percentEncodedUser.flatMap({ $0.percentDecoded() }), !user.isEmpty else {
            throw .badRequest("the database URL names no user; expected postgres://user:password@host/database")
        }
        username = user
        password = components.percentEncodedPassword.flatMap { $0.percentDecoded() }
        let hostName = components.host.map { $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : $0 }
        host = (hostName?.isEmpty ?? true) ? nil : hostName
        port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw .badRequest("the database URL's port \(port) is not a port") }
        let path = components.percentEncodedPath.percentDecoded() ?? components.path
        let name = path.hasPrefix("/") ? String(path.dropFirst()) : path
        guard !name.contains("/") else { throw .badRequest("the database URL's path must be one database name") }
        database = name.isEmpty ? user : name
        tlsMode = .prefer
        rootCertificateFile = nil
        socketDirectory = nil
        applicationName = nil
        connectTimeout = nil
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw .badRequest("the database URL's sslmode '\(value)' is not one of \(modes)")
                }
                tlsMode = mode
            case "sslrootcert":
                guard !value.isEmpty else { throw .badRequest("the database URL's sslrootcert must name a PEM file of CAs") }
                rootCertificateFile = value
            case "host":
                guard value.hasPrefix("/") else {
                    throw .badRequest("the database URL's host parameter must be a socket directory (an absolute path)")
                }
                socketDirectory = value
            case "application_name":
                applicationName = value
            case "connect_timeout":
                guard let seconds = Int(value), seconds > 0 else {
                    throw .badRequest("the database URL's connect_timeout must be a whole number of seconds above 0")
                }
                connectTimeout = .seconds(seconds)
            default:
                throw .badRequest("the database URL's parameter '\(item.name)' is not supported")
            }
        }
        if socketDirectory != nil { host = nil }
        if host == nil, socketDirectory == nil { host = "localhost" }
    }

    /// The path of the Unix socket, for a URL with ``socketDirectory``.
    public var socketPath: String? {
        socketDirectory.map { "\($0)/.s.PGSQL.\(port)" }
    }

    /// Mirrors (`dump`, a debugger) see the URL without its password too.
    public var customMirror: Mirror { Mirror(self, children: ["url": description]) }

    /// The URL with the password replaced by `***`: safe to log.
    public var description: String {
        var text = "postgres://\(username)"
        if password != nil { text += ":***" }
        text += "@"
        if let host { text += host.contains(":") ? "[\(host)]" : host }
        text += ":\(port)/\(database)"
        var parameters: [String] = []
        if let socketDirectory { parameters.append("host=\(socketDirectory)") }
        if tlsMode != .prefer { parameters.append("sslmode=\(tlsMode.rawValue)") }
        if let rootCertificateFile { parameters.append("sslrootcert=\(rootCertificateFile)") }
        if !parameters.isEmpty { text += "?" + parameters.joined(separator: "&") }
        return text
    }
}
