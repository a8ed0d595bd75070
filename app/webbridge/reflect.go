package webbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"reflect"
)

var errorType = reflect.TypeFor[error]()

// reflectBindings returns the callable methods of the bound structs by "pkg.Struct.Method",
// and the manifest pkg → struct → method names for the shim. It follows Wails's rules: a
// bound value is a pointer to a named struct; its exported methods are callable if they return
// nothing, one value, an error, or a value and an error.
func reflectBindings(bind []any) (map[string]reflect.Value, map[string]map[string][]string, error) {
	methods := map[string]reflect.Value{}
	manifest := map[string]map[string][]string{}
	for _, b := range bind {
		v := reflect.ValueOf(b)
		t := v.Type()
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || t.Elem().Name() == "" || v.IsNil() {
			return nil, nil, fmt.Errorf("cannot bind %T: the bridge binds non-nil pointers to named structs, like Wails", b)
		}
		pkg := path.Base(t.Elem().PkgPath())
		st := t.Elem().Name()
		if manifest[pkg] == nil {
			manifest[pkg] = map[string][]string{}
		}
		if _, dup := manifest[pkg][st]; dup {
			return nil, nil, fmt.Errorf("cannot bind %T twice", b)
		}
		names := []string{}
		for i := range t.NumMethod() {
			m := t.Method(i)
			if !callable(m.Type) {
				continue
			}
			names = append(names, m.Name)
			methods[pkg+"."+st+"."+m.Name] = v.Method(i)
		}
		manifest[pkg][st] = names
	}
	return methods, manifest, nil
}

func callable(mt reflect.Type) bool {
	if mt.IsVariadic() {
		return false
	}
	switch mt.NumOut() {
	case 0, 1:
		return true
	case 2:
		return mt.Out(1) == errorType
	}
	return false
}

// call runs one bound method with JSON arguments. A method's own error is returned as-is with
// status 200-equivalent semantics for the page (the promise rejects with its text); the HTTP
// status returned says whether the call itself was malformed.
func (s *Server) call(name string, args []json.RawMessage) (result any, status int, err error) {
	m, ok := s.methods[name]
	if !ok {
		return nil, http.StatusNotFound, fmt.Errorf("there is no bound method %q", name)
	}
	mt := m.Type()
	if len(args) != mt.NumIn() {
		return nil, http.StatusBadRequest, fmt.Errorf("%s takes %d arguments, got %d", name, mt.NumIn(), len(args))
	}
	in := make([]reflect.Value, len(args))
	for i, raw := range args {
		p := reflect.New(mt.In(i))
		if err := json.Unmarshal(raw, p.Interface()); err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("argument %d of %s is not a valid %s: %v", i+1, name, mt.In(i), err)
		}
		in[i] = p.Elem()
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("bound method panicked", "method", name, "panic", fmt.Sprint(r))
			result, status, err = nil, http.StatusInternalServerError, errors.New(name+" failed with an internal error; see the log file")
		}
	}()
	out := m.Call(in)
	switch {
	case len(out) == 0:
		return nil, http.StatusOK, nil
	case len(out) == 1 && mt.Out(0) == errorType:
		if e, _ := out[0].Interface().(error); e != nil {
			return nil, http.StatusOK, e
		}
		return nil, http.StatusOK, nil
	case len(out) == 1:
		return out[0].Interface(), http.StatusOK, nil
	default:
		if e, _ := out[1].Interface().(error); e != nil {
			return nil, http.StatusOK, e
		}
		return out[0].Interface(), http.StatusOK, nil
	}
}
