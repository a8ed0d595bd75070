export namespace fronts {
	
	export class ActivityEntry {
	    seq: number;
	    tool: string;
	    company: string;
	    at: string;
	    status: string;
	    durationMs: number;
	    approvalId: string;
	
	    static createFrom(source: any = {}) {
	        return new ActivityEntry(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.seq = source["seq"];
	        this.tool = source["tool"];
	        this.company = source["company"];
	        this.at = source["at"];
	        this.status = source["status"];
	        this.durationMs = source["durationMs"];
	        this.approvalId = source["approvalId"];
	    }
	}
	export class ActivityInfo {
	    socket: string;
	    listening: boolean;
	    problem: string;
	
	    static createFrom(source: any = {}) {
	        return new ActivityInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.socket = source["socket"];
	        this.listening = source["listening"];
	        this.problem = source["problem"];
	    }
	}
	export class AppInfo {
	    name: string;
	    version: string;
	    protocol: string;
	    dataDir: string;
	    configDir: string;
	    logFile: string;
	    keyring: string;
	    demo: string;
	    developer: string;
	    problem: string;
	    problemText: string;
	    identity: string;
	    identityMode: string;
	    operator: string;
	    stateFile: string;
	    socket: string;
	    reset: boolean;
	    defaultOperator: string;
	    welcome: boolean;
	    demoFromWindow: boolean;
	
	    static createFrom(source: any = {}) {
	        return new AppInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.name = source["name"];
	        this.version = source["version"];
	        this.protocol = source["protocol"];
	        this.dataDir = source["dataDir"];
	        this.configDir = source["configDir"];
	        this.logFile = source["logFile"];
	        this.keyring = source["keyring"];
	        this.demo = source["demo"];
	        this.developer = source["developer"];
	        this.problem = source["problem"];
	        this.problemText = source["problemText"];
	        this.identity = source["identity"];
	        this.identityMode = source["identityMode"];
	        this.operator = source["operator"];
	        this.stateFile = source["stateFile"];
	        this.socket = source["socket"];
	        this.reset = source["reset"];
	        this.defaultOperator = source["defaultOperator"];
	        this.welcome = source["welcome"];
	        this.demoFromWindow = source["demoFromWindow"];
	    }
	}
	export class Outcome {
	    status: string;
	    approvalId: string;
	    httpStatus: number;
	    body: string;
	    text: string;
	    message: string;
	
	    static createFrom(source: any = {}) {
	        return new Outcome(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.status = source["status"];
	        this.approvalId = source["approvalId"];
	        this.httpStatus = source["httpStatus"];
	        this.body = source["body"];
	        this.text = source["text"];
	        this.message = source["message"];
	    }
	}
	export class ApprovalRequest {
	    method: string;
	    url: string;
	    body: string;
	    tool: string;
	    arguments: string;
	    requester: string;
	    conversation: string;
	
	    static createFrom(source: any = {}) {
	        return new ApprovalRequest(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.method = source["method"];
	        this.url = source["url"];
	        this.body = source["body"];
	        this.tool = source["tool"];
	        this.arguments = source["arguments"];
	        this.requester = source["requester"];
	        this.conversation = source["conversation"];
	    }
	}
	export class TermRow {
	    path: string;
	    value: string;
	
	    static createFrom(source: any = {}) {
	        return new TermRow(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.path = source["path"];
	        this.value = source["value"];
	    }
	}
	export class ApprovalRevision {
	    operationId: string;
	    revision: string;
	    summary: operations.Summary;
	    summaryText: string;
	    terms: TermRow[];
	    expiresAt: string;
	    digest: string;
	
	    static createFrom(source: any = {}) {
	        return new ApprovalRevision(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.operationId = source["operationId"];
	        this.revision = source["revision"];
	        this.summary = this.convertValues(source["summary"], operations.Summary);
	        this.summaryText = source["summaryText"];
	        this.terms = this.convertValues(source["terms"], TermRow);
	        this.expiresAt = source["expiresAt"];
	        this.digest = source["digest"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ApprovalItem {
	    id: string;
	    company: string;
	    companyName: string;
	    companyDomain: string;
	    account: string;
	    sid: string;
	    interface: string;
	    state: string;
	    decidable: boolean;
	    violation: string;
	    current: ApprovalRevision;
	    previous?: ApprovalRevision;
	    changes?: operations.Changes;
	    warnings: operations.Warning[];
	    request: ApprovalRequest;
	    result?: Outcome;
	    created: string;
	    updated: string;
	    decided: string;
	
	    static createFrom(source: any = {}) {
	        return new ApprovalItem(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.company = source["company"];
	        this.companyName = source["companyName"];
	        this.companyDomain = source["companyDomain"];
	        this.account = source["account"];
	        this.sid = source["sid"];
	        this.interface = source["interface"];
	        this.state = source["state"];
	        this.decidable = source["decidable"];
	        this.violation = source["violation"];
	        this.current = this.convertValues(source["current"], ApprovalRevision);
	        this.previous = this.convertValues(source["previous"], ApprovalRevision);
	        this.changes = this.convertValues(source["changes"], operations.Changes);
	        this.warnings = this.convertValues(source["warnings"], operations.Warning);
	        this.request = this.convertValues(source["request"], ApprovalRequest);
	        this.result = this.convertValues(source["result"], Outcome);
	        this.created = source["created"];
	        this.updated = source["updated"];
	        this.decided = source["decided"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ApprovalRow {
	    id: string;
	    company: string;
	    companyName: string;
	    companyDomain: string;
	    account: string;
	    interface: string;
	    state: string;
	    decidable: boolean;
	    violation: string;
	    summaryText: string;
	    expiresAt: string;
	    created: string;
	    updated: string;
	    decided: string;
	
	    static createFrom(source: any = {}) {
	        return new ApprovalRow(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.company = source["company"];
	        this.companyName = source["companyName"];
	        this.companyDomain = source["companyDomain"];
	        this.account = source["account"];
	        this.interface = source["interface"];
	        this.state = source["state"];
	        this.decidable = source["decidable"];
	        this.violation = source["violation"];
	        this.summaryText = source["summaryText"];
	        this.expiresAt = source["expiresAt"];
	        this.created = source["created"];
	        this.updated = source["updated"];
	        this.decided = source["decided"];
	    }
	}
	export class ApprovalPage {
	    items: ApprovalRow[];
	    next: string;
	
	    static createFrom(source: any = {}) {
	        return new ApprovalPage(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.items = this.convertValues(source["items"], ApprovalRow);
	        this.next = source["next"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	
	
	export class ApprovalsStatus {
	    available: boolean;
	    problem: string;
	    demo: boolean;
	    demoCompany: string;
	
	    static createFrom(source: any = {}) {
	        return new ApprovalsStatus(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.available = source["available"];
	        this.problem = source["problem"];
	        this.demo = source["demo"];
	        this.demoCompany = source["demoCompany"];
	    }
	}
	export class BrowserState {
	    open: boolean;
	    company: string;
	    companyName: string;
	    account: string;
	    url: string;
	    joined: boolean;
	    signedIn: boolean;
	    scopes: string[];
	    joinText: string;
	    screenshot: string;
	    visible: boolean;
	    updated: string;
	    problem: string;
	
	    static createFrom(source: any = {}) {
	        return new BrowserState(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.open = source["open"];
	        this.company = source["company"];
	        this.companyName = source["companyName"];
	        this.account = source["account"];
	        this.url = source["url"];
	        this.joined = source["joined"];
	        this.signedIn = source["signedIn"];
	        this.scopes = source["scopes"];
	        this.joinText = source["joinText"];
	        this.screenshot = source["screenshot"];
	        this.visible = source["visible"];
	        this.updated = source["updated"];
	        this.problem = source["problem"];
	    }
	}
	export class SignInOffer {
	    offered: boolean;
	    disabled: boolean;
	    direct: boolean;
	    device: boolean;
	
	    static createFrom(source: any = {}) {
	        return new SignInOffer(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.offered = source["offered"];
	        this.disabled = source["disabled"];
	        this.direct = source["direct"];
	        this.device = source["device"];
	    }
	}
	export class CompanyCard {
	    identifier: string;
	    name: string;
	    domain: string;
	    issuer: string;
	    logo: string;
	    signIn: SignInOffer;
	
	    static createFrom(source: any = {}) {
	        return new CompanyCard(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.identifier = source["identifier"];
	        this.name = source["name"];
	        this.domain = source["domain"];
	        this.issuer = source["issuer"];
	        this.logo = source["logo"];
	        this.signIn = this.convertValues(source["signIn"], SignInOffer);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ExcludedTaskEntry {
	    task: string;
	    alternative: string;
	
	    static createFrom(source: any = {}) {
	        return new ExcludedTaskEntry(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.task = source["task"];
	        this.alternative = source["alternative"];
	    }
	}
	export class CompanyEntry {
	    company: CompanyCard;
	    accounts: oauth.AccountStatus[];
	    problem?: string;
	    excludedTasks: ExcludedTaskEntry[];
	    excludedTasksProblem?: string;
	    scopeWords: {[key: string]: string};
	    demo: boolean;
	    demoAccount?: string;
	
	    static createFrom(source: any = {}) {
	        return new CompanyEntry(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.company = this.convertValues(source["company"], CompanyCard);
	        this.accounts = this.convertValues(source["accounts"], oauth.AccountStatus);
	        this.problem = source["problem"];
	        this.excludedTasks = this.convertValues(source["excludedTasks"], ExcludedTaskEntry);
	        this.excludedTasksProblem = source["excludedTasksProblem"];
	        this.scopeWords = source["scopeWords"];
	        this.demo = source["demo"];
	        this.demoAccount = source["demoAccount"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class CompanyList {
	    companies: CompanyEntry[];
	    next: string;
	    total: number;
	
	    static createFrom(source: any = {}) {
	        return new CompanyList(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.companies = this.convertValues(source["companies"], CompanyEntry);
	        this.next = source["next"];
	        this.total = source["total"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ConversationAuthor {
	    kind: string;
	    name: string;
	    picture: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationAuthor(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.kind = source["kind"];
	        this.name = source["name"];
	        this.picture = source["picture"];
	    }
	}
	export class ConversationCompany {
	    identifier: string;
	    name: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationCompany(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.identifier = source["identifier"];
	        this.name = source["name"];
	    }
	}
	export class ConversationEntry {
	    eventId: string;
	    type: string;
	    at: string;
	    messageId: string;
	    author?: ConversationAuthor;
	    text: string;
	    data: string;
	    operation: string;
	    revision: string;
	    status: string;
	    responder: string;
	    rawStatus: string;
	    rawResponder: string;
	    scope: string;
	    reason: string;
	    conversationId: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationEntry(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.eventId = source["eventId"];
	        this.type = source["type"];
	        this.at = source["at"];
	        this.messageId = source["messageId"];
	        this.author = this.convertValues(source["author"], ConversationAuthor);
	        this.text = source["text"];
	        this.data = source["data"];
	        this.operation = source["operation"];
	        this.revision = source["revision"];
	        this.status = source["status"];
	        this.responder = source["responder"];
	        this.rawStatus = source["rawStatus"];
	        this.rawResponder = source["rawResponder"];
	        this.scope = source["scope"];
	        this.reason = source["reason"];
	        this.conversationId = source["conversationId"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ConversationInvite {
	    eventId: string;
	    reason: string;
	    at: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationInvite(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.eventId = source["eventId"];
	        this.reason = source["reason"];
	        this.at = source["at"];
	    }
	}
	export class ConversationPage {
	    from: number;
	    entries: ConversationEntry[];
	    total: number;
	
	    static createFrom(source: any = {}) {
	        return new ConversationPage(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.from = source["from"];
	        this.entries = this.convertValues(source["entries"], ConversationEntry);
	        this.total = source["total"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class ConversationWriting {
	    messageId: string;
	    text: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationWriting(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.messageId = source["messageId"];
	        this.text = source["text"];
	    }
	}
	export class ConversationState {
	    company: string;
	    id: string;
	    title: string;
	    account: string;
	    parent: string;
	    direct: boolean;
	    status: string;
	    responder: string;
	    rawStatus: string;
	    rawResponder: string;
	    pending: number;
	    authScopes: string[];
	    invites: ConversationInvite[];
	    directOpen: string;
	    writing: ConversationWriting[];
	    total: number;
	    updated: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationState(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.company = source["company"];
	        this.id = source["id"];
	        this.title = source["title"];
	        this.account = source["account"];
	        this.parent = source["parent"];
	        this.direct = source["direct"];
	        this.status = source["status"];
	        this.responder = source["responder"];
	        this.rawStatus = source["rawStatus"];
	        this.rawResponder = source["rawResponder"];
	        this.pending = source["pending"];
	        this.authScopes = source["authScopes"];
	        this.invites = this.convertValues(source["invites"], ConversationInvite);
	        this.directOpen = source["directOpen"];
	        this.writing = this.convertValues(source["writing"], ConversationWriting);
	        this.total = source["total"];
	        this.updated = source["updated"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class ConversationsStatus {
	    available: boolean;
	    problem: string;
	
	    static createFrom(source: any = {}) {
	        return new ConversationsStatus(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.available = source["available"];
	        this.problem = source["problem"];
	    }
	}
	export class DeveloperView {
	    active: boolean;
	    companies: string[];
	    hosts: string[];
	    ca_file: string;
	    client_id: string;
	    agent_ca_file: string;
	    saved_companies: string[];
	    saved_ca_file: string;
	    restart_needed: boolean;
	    problem: string;
	    demo: boolean;
	
	    static createFrom(source: any = {}) {
	        return new DeveloperView(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.active = source["active"];
	        this.companies = source["companies"];
	        this.hosts = source["hosts"];
	        this.ca_file = source["ca_file"];
	        this.client_id = source["client_id"];
	        this.agent_ca_file = source["agent_ca_file"];
	        this.saved_companies = source["saved_companies"];
	        this.saved_ca_file = source["saved_ca_file"];
	        this.restart_needed = source["restart_needed"];
	        this.problem = source["problem"];
	        this.demo = source["demo"];
	    }
	}
	export class DeviceView {
	    organization: string;
	    domain: string;
	    verificationUri: string;
	    verificationUriComplete: string;
	    userCode: string;
	    qr: string;
	    intervalSeconds: number;
	
	    static createFrom(source: any = {}) {
	        return new DeviceView(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.organization = source["organization"];
	        this.domain = source["domain"];
	        this.verificationUri = source["verificationUri"];
	        this.verificationUriComplete = source["verificationUriComplete"];
	        this.userCode = source["userCode"];
	        this.qr = source["qr"];
	        this.intervalSeconds = source["intervalSeconds"];
	    }
	}
	export class DialogStep {
	    name: string;
	    ms: number;
	
	    static createFrom(source: any = {}) {
	        return new DialogStep(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.name = source["name"];
	        this.ms = source["ms"];
	    }
	}
	export class ExampleAgentRun {
	    running: boolean;
	    lines: string[];
	    error: string;
	
	    static createFrom(source: any = {}) {
	        return new ExampleAgentRun(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.running = source["running"];
	        this.lines = source["lines"];
	        this.error = source["error"];
	    }
	}
	
	export class FeedbackReport {
	    company: string;
	    task: string;
	    description: string;
	    status: string;
	    at: string;
	
	    static createFrom(source: any = {}) {
	        return new FeedbackReport(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.company = source["company"];
	        this.task = source["task"];
	        this.description = source["description"];
	        this.status = source["status"];
	        this.at = source["at"];
	    }
	}
	export class FilesView {
	    data: string;
	    config: string;
	    state: string;
	    database: string;
	    log: string;
	    socket: string;
	
	    static createFrom(source: any = {}) {
	        return new FilesView(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.data = source["data"];
	        this.config = source["config"];
	        this.state = source["state"];
	        this.database = source["database"];
	        this.log = source["log"];
	        this.socket = source["socket"];
	    }
	}
	export class FlowView {
	    id: string;
	    kind: string;
	    state: string;
	    company: CompanyCard;
	    account: string;
	    requested: oauth.ScopeInfo[];
	    // Go type: time
	    deadline: any;
	    remainingSeconds: number;
	    url?: string;
	    openError?: string;
	    device?: DeviceView;
	    granted?: string[];
	    missing?: string[];
	    message?: string;
	    detail?: string;
	
	    static createFrom(source: any = {}) {
	        return new FlowView(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.kind = source["kind"];
	        this.state = source["state"];
	        this.company = this.convertValues(source["company"], CompanyCard);
	        this.account = source["account"];
	        this.requested = this.convertValues(source["requested"], oauth.ScopeInfo);
	        this.deadline = this.convertValues(source["deadline"], null);
	        this.remainingSeconds = source["remainingSeconds"];
	        this.url = source["url"];
	        this.openError = source["openError"];
	        this.device = this.convertValues(source["device"], DeviceView);
	        this.granted = source["granted"];
	        this.missing = source["missing"];
	        this.message = source["message"];
	        this.detail = source["detail"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class IdentityInfo {
	    mode: string;
	    clientId: string;
	    clientName?: string;
	    operator?: string;
	    deviceId?: string;
	    enrolled?: string;
	    next: string;
	    nextOperator?: string;
	    ownClientId?: string;
	    fixed: boolean;
	    restart: boolean;
	    problem?: string;
	
	    static createFrom(source: any = {}) {
	        return new IdentityInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.mode = source["mode"];
	        this.clientId = source["clientId"];
	        this.clientName = source["clientName"];
	        this.operator = source["operator"];
	        this.deviceId = source["deviceId"];
	        this.enrolled = source["enrolled"];
	        this.next = source["next"];
	        this.nextOperator = source["nextOperator"];
	        this.ownClientId = source["ownClientId"];
	        this.fixed = source["fixed"];
	        this.restart = source["restart"];
	        this.problem = source["problem"];
	    }
	}
	export class IdentityView {
	    client_id: string;
	    keyring: string;
	    problem: string;
	
	    static createFrom(source: any = {}) {
	        return new IdentityView(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.client_id = source["client_id"];
	        this.keyring = source["keyring"];
	        this.problem = source["problem"];
	    }
	}
	export class InspectorToken {
	    where: string;
	    header: string;
	    claims: string;
	    note: string;
	
	    static createFrom(source: any = {}) {
	        return new InspectorToken(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.where = source["where"];
	        this.header = source["header"];
	        this.claims = source["claims"];
	        this.note = source["note"];
	    }
	}
	export class InspectorHeader {
	    name: string;
	    value: string;
	
	    static createFrom(source: any = {}) {
	        return new InspectorHeader(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.name = source["name"];
	        this.value = source["value"];
	    }
	}
	export class InspectorRow {
	    id: number;
	    at: string;
	    company: string;
	    method: string;
	    url: string;
	    status: number;
	    duration_ms: number;
	    cause: string;
	    cause_kind: string;
	    sid: string;
	    findings: number;
	    must_fail: boolean;
	    error: boolean;
	    resend_of: number;
	
	    static createFrom(source: any = {}) {
	        return new InspectorRow(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.at = source["at"];
	        this.company = source["company"];
	        this.method = source["method"];
	        this.url = source["url"];
	        this.status = source["status"];
	        this.duration_ms = source["duration_ms"];
	        this.cause = source["cause"];
	        this.cause_kind = source["cause_kind"];
	        this.sid = source["sid"];
	        this.findings = source["findings"];
	        this.must_fail = source["must_fail"];
	        this.error = source["error"];
	        this.resend_of = source["resend_of"];
	    }
	}
	export class InspectorEntry {
	    row: InspectorRow;
	    request_headers: InspectorHeader[];
	    request_body: string;
	    response_headers: InspectorHeader[];
	    response_body: string;
	    tokens: InspectorToken[];
	    findings: inspect.Finding[];
	    curl: string;
	
	    static createFrom(source: any = {}) {
	        return new InspectorEntry(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.row = this.convertValues(source["row"], InspectorRow);
	        this.request_headers = this.convertValues(source["request_headers"], InspectorHeader);
	        this.request_body = source["request_body"];
	        this.response_headers = this.convertValues(source["response_headers"], InspectorHeader);
	        this.response_body = source["response_body"];
	        this.tokens = this.convertValues(source["tokens"], InspectorToken);
	        this.findings = this.convertValues(source["findings"], inspect.Finding);
	        this.curl = source["curl"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class InspectorFault {
	    name: string;
	    on: boolean;
	    group: string;
	
	    static createFrom(source: any = {}) {
	        return new InspectorFault(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.name = source["name"];
	        this.on = source["on"];
	        this.group = source["group"];
	    }
	}
	export class InspectorStep {
	    exchange: number;
	    from: number;
	    to: number;
	    label: string;
	    status: number;
	    error: boolean;
	    at: string;
	
	    static createFrom(source: any = {}) {
	        return new InspectorStep(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.exchange = source["exchange"];
	        this.from = source["from"];
	        this.to = source["to"];
	        this.label = source["label"];
	        this.status = source["status"];
	        this.error = source["error"];
	        this.at = source["at"];
	    }
	}
	export class InspectorFlow {
	    id: string;
	    kind: string;
	    title: string;
	    company: string;
	    at: string;
	    lanes: string[];
	    arrows: InspectorStep[];
	
	    static createFrom(source: any = {}) {
	        return new InspectorFlow(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.kind = source["kind"];
	        this.title = source["title"];
	        this.company = source["company"];
	        this.at = source["at"];
	        this.lanes = source["lanes"];
	        this.arrows = this.convertValues(source["arrows"], InspectorStep);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class InspectorPage {
	    rows: InspectorRow[];
	    total: number;
	    searched: number;
	    capped: boolean;
	    companies: string[];
	    sessions: string[];
	    resend: boolean;
	
	    static createFrom(source: any = {}) {
	        return new InspectorPage(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.rows = this.convertValues(source["rows"], InspectorRow);
	        this.total = source["total"];
	        this.searched = source["searched"];
	        this.capped = source["capped"];
	        this.companies = source["companies"];
	        this.sessions = source["sessions"];
	        this.resend = source["resend"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class InspectorQuery {
	    company: string;
	    sid: string;
	    errors_only: boolean;
	    findings_only: boolean;
	    search: string;
	    limit: number;
	
	    static createFrom(source: any = {}) {
	        return new InspectorQuery(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.company = source["company"];
	        this.sid = source["sid"];
	        this.errors_only = source["errors_only"];
	        this.findings_only = source["findings_only"];
	        this.search = source["search"];
	        this.limit = source["limit"];
	    }
	}
	export class InspectorResend {
	    of: number;
	    method: string;
	    url: string;
	    headers: InspectorHeader[];
	    body: string;
	
	    static createFrom(source: any = {}) {
	        return new InspectorResend(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.of = source["of"];
	        this.method = source["method"];
	        this.url = source["url"];
	        this.headers = this.convertValues(source["headers"], InspectorHeader);
	        this.body = source["body"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class InspectorResent {
	    entry: InspectorEntry;
	    ids: number[];
	    refused: string;
	
	    static createFrom(source: any = {}) {
	        return new InspectorResent(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.entry = this.convertValues(source["entry"], InspectorEntry);
	        this.ids = source["ids"];
	        this.refused = source["refused"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	
	
	export class ModelRequest {
	    id: string;
	    company: string;
	    name: string;
	    domain: string;
	    scopes: string[];
	    modelReason: string;
	    poppydeskReason: string;
	    // Go type: time
	    requested: any;
	    scopeWords: {[key: string]: string};
	
	    static createFrom(source: any = {}) {
	        return new ModelRequest(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.company = source["company"];
	        this.name = source["name"];
	        this.domain = source["domain"];
	        this.scopes = source["scopes"];
	        this.modelReason = source["modelReason"];
	        this.poppydeskReason = source["poppydeskReason"];
	        this.requested = this.convertValues(source["requested"], null);
	        this.scopeWords = source["scopeWords"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class OperatorStatus {
	    operator?: string;
	    reachable: boolean;
	    inUse: boolean;
	    error?: string;
	    clientId?: string;
	    clientName?: string;
	    logoUri?: string;
	    logo?: string;
	    logoProblem?: string;
	    signingKid?: string;
	    enrollment?: string;
	    perHour?: number;
	    perDay?: number;
	
	    static createFrom(source: any = {}) {
	        return new OperatorStatus(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.operator = source["operator"];
	        this.reachable = source["reachable"];
	        this.inUse = source["inUse"];
	        this.error = source["error"];
	        this.clientId = source["clientId"];
	        this.clientName = source["clientName"];
	        this.logoUri = source["logoUri"];
	        this.logo = source["logo"];
	        this.logoProblem = source["logoProblem"];
	        this.signingKid = source["signingKid"];
	        this.enrollment = source["enrollment"];
	        this.perHour = source["perHour"];
	        this.perDay = source["perDay"];
	    }
	}
	
	export class PlanScope {
	    name: string;
	    description: string;
	    changes: string;
	    personal_data: boolean;
	    hinted: boolean;
	    held: boolean;
	    checked: boolean;
	    requested: boolean;
	
	    static createFrom(source: any = {}) {
	        return new PlanScope(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.name = source["name"];
	        this.description = source["description"];
	        this.changes = source["changes"];
	        this.personal_data = source["personal_data"];
	        this.hinted = source["hinted"];
	        this.held = source["held"];
	        this.checked = source["checked"];
	        this.requested = source["requested"];
	    }
	}
	export class Preferences {
	    theme: string;
	    notifications: boolean;
	    feedbackReports: boolean;
	    feedbackReportsProblem: string;
	
	    static createFrom(source: any = {}) {
	        return new Preferences(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.theme = source["theme"];
	        this.notifications = source["notifications"];
	        this.feedbackReports = source["feedbackReports"];
	        this.feedbackReportsProblem = source["feedbackReportsProblem"];
	    }
	}
	export class Section {
	    id: string;
	    title: string;
	    count: number;
	
	    static createFrom(source: any = {}) {
	        return new Section(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.id = source["id"];
	        this.title = source["title"];
	        this.count = source["count"];
	    }
	}
	export class SettingsView {
	    developer: DeveloperView;
	    identity: IdentityView;
	    files: FilesView;
	    version: string;
	
	    static createFrom(source: any = {}) {
	        return new SettingsView(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.developer = this.convertValues(source["developer"], DeveloperView);
	        this.identity = this.convertValues(source["identity"], IdentityView);
	        this.files = this.convertValues(source["files"], FilesView);
	        this.version = source["version"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	export class SignInPlan {
	    company: CompanyCard;
	    account: string;
	    accounts: oauth.AccountStatus[];
	    scopes: PlanScope[];
	    request?: ModelRequest;
	
	    static createFrom(source: any = {}) {
	        return new SignInPlan(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.company = this.convertValues(source["company"], CompanyCard);
	        this.account = source["account"];
	        this.accounts = this.convertValues(source["accounts"], oauth.AccountStatus);
	        this.scopes = this.convertValues(source["scopes"], PlanScope);
	        this.request = this.convertValues(source["request"], ModelRequest);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}

}

export namespace inspect {
	
	export class Finding {
	    rule: string;
	    level: string;
	    section: string;
	    title: string;
	    seen: string;
	    expected: string;
	    fix: string;
	    company?: string;
	    url?: string;
	    // Go type: time
	    at: any;
	    exchange?: number;
	
	    static createFrom(source: any = {}) {
	        return new Finding(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.rule = source["rule"];
	        this.level = source["level"];
	        this.section = source["section"];
	        this.title = source["title"];
	        this.seen = source["seen"];
	        this.expected = source["expected"];
	        this.fix = source["fix"];
	        this.company = source["company"];
	        this.url = source["url"];
	        this.at = this.convertValues(source["at"], null);
	        this.exchange = source["exchange"];
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}

}

export namespace oauth {
	
	export class AccountStatus {
	    company: string;
	    account: string;
	    signed_in: boolean;
	    scopes?: string[];
	    resources?: string[];
	
	    static createFrom(source: any = {}) {
	        return new AccountStatus(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.company = source["company"];
	        this.account = source["account"];
	        this.signed_in = source["signed_in"];
	        this.scopes = source["scopes"];
	        this.resources = source["resources"];
	    }
	}
	export class ScopeInfo {
	    name: string;
	    description?: string;
	    changes: string;
	    personal_data: boolean;
	    hinted: boolean;
	    held: boolean;
	
	    static createFrom(source: any = {}) {
	        return new ScopeInfo(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.name = source["name"];
	        this.description = source["description"];
	        this.changes = source["changes"];
	        this.personal_data = source["personal_data"];
	        this.hinted = source["hinted"];
	        this.held = source["held"];
	    }
	}

}

export namespace operations {
	
	export class ListItem {
	    blocks: Block[];
	
	    static createFrom(source: any = {}) {
	        return new ListItem(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.blocks = this.convertValues(source["blocks"], Block);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class Inline {
	    text: string;
	    emphasis?: boolean;
	    strong?: boolean;
	    literal?: boolean;
	    invisible?: boolean;
	
	    static createFrom(source: any = {}) {
	        return new Inline(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.text = source["text"];
	        this.emphasis = source["emphasis"];
	        this.strong = source["strong"];
	        this.literal = source["literal"];
	        this.invisible = source["invisible"];
	    }
	}
	export class Block {
	    kind: string;
	    inlines?: Inline[];
	    ordered?: boolean;
	    start?: number;
	    items?: ListItem[];
	
	    static createFrom(source: any = {}) {
	        return new Block(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.kind = source["kind"];
	        this.inlines = this.convertValues(source["inlines"], Inline);
	        this.ordered = source["ordered"];
	        this.start = source["start"];
	        this.items = this.convertValues(source["items"], ListItem);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	export class TermChange {
	    path: string;
	    kind: string;
	    old?: number[];
	    new?: number[];
	
	    static createFrom(source: any = {}) {
	        return new TermChange(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.path = source["path"];
	        this.kind = source["kind"];
	        this.old = source["old"];
	        this.new = source["new"];
	    }
	}
	export class TextChange {
	    op: string;
	    text: string;
	
	    static createFrom(source: any = {}) {
	        return new TextChange(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.op = source["op"];
	        this.text = source["text"];
	    }
	}
	export class Changes {
	    summary_changed: boolean;
	    summary?: TextChange[];
	    terms?: TermChange[];
	    expiry_changed: boolean;
	    // Go type: time
	    old_expires_at: any;
	    // Go type: time
	    new_expires_at: any;
	
	    static createFrom(source: any = {}) {
	        return new Changes(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.summary_changed = source["summary_changed"];
	        this.summary = this.convertValues(source["summary"], TextChange);
	        this.terms = this.convertValues(source["terms"], TermChange);
	        this.expiry_changed = source["expiry_changed"];
	        this.old_expires_at = this.convertValues(source["old_expires_at"], null);
	        this.new_expires_at = this.convertValues(source["new_expires_at"], null);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	
	export class SummaryWarning {
	    code: string;
	    code_point: string;
	    count: number;
	    message: string;
	
	    static createFrom(source: any = {}) {
	        return new SummaryWarning(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.code = source["code"];
	        this.code_point = source["code_point"];
	        this.count = source["count"];
	        this.message = source["message"];
	    }
	}
	export class Summary {
	    blocks: Block[];
	    plain_text: string;
	    warnings?: SummaryWarning[];
	
	    static createFrom(source: any = {}) {
	        return new Summary(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.blocks = this.convertValues(source["blocks"], Block);
	        this.plain_text = source["plain_text"];
	        this.warnings = this.convertValues(source["warnings"], SummaryWarning);
	    }
	
		convertValues(a: any, classs: any, asMap: boolean = false): any {
		    if (!a) {
		        return a;
		    }
		    if (a.slice && a.map) {
		        return (a as any[]).map(elem => this.convertValues(elem, classs));
		    } else if ("object" === typeof a) {
		        if (asMap) {
		            for (const key of Object.keys(a)) {
		                a[key] = new classs(a[key]);
		            }
		            return a;
		        }
		        return new classs(a);
		    }
		    return a;
		}
	}
	
	
	
	export class Warning {
	    code: string;
	    message: string;
	    term?: string;
	    where?: string;
	    term_value?: number[];
	    request_value?: number[];
	
	    static createFrom(source: any = {}) {
	        return new Warning(source);
	    }
	
	    constructor(source: any = {}) {
	        if ('string' === typeof source) source = JSON.parse(source);
	        this.code = source["code"];
	        this.message = source["message"];
	        this.term = source["term"];
	        this.where = source["where"];
	        this.term_value = source["term_value"];
	        this.request_value = source["request_value"];
	    }
	}

}

