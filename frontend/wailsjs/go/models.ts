export namespace app {
	
	export class AppInfo {
	    name: string;
	    version: string;
	    protocol: string;
	    dataDir: string;
	    configDir: string;
	    logFile: string;
	    keyring: string;
	    demo: string;
	
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

}

