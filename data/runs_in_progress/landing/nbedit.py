import json
class NB:
    def __init__(self, path):
        self.path=path; self.nb=json.load(open(path))
    def cell(self, cid):
        for c in self.nb['cells']:
            if c.get('id')==cid: return c
        raise KeyError(cid)
    def src(self, cid): return ''.join(self.cell(cid)['source'])
    def set(self, cid, text):
        self.cell(cid)['source']=text.splitlines(True)
    def rep(self, cid, old, new):
        s=self.src(cid); assert s.count(old)==1, (cid, old, s.count(old)); self.set(cid, s.replace(old,new))
    def insert_after(self, cid, kind, text, new_id, tags=None):
        idx=[i for i,c in enumerate(self.nb['cells']) if c.get('id')==cid][0]
        c={'cell_type':kind,'id':new_id,'metadata':({'tags':tags} if tags else {}),'source':text.splitlines(True)}
        if kind=='code': c['execution_count']=None; c['outputs']=[]
        self.nb['cells'].insert(idx+1,c)
    def delete(self, cid):
        self.nb['cells']=[c for c in self.nb['cells'] if c.get('id')!=cid]
    def save(self):
        with open(self.path,'w') as f:
            json.dump(self.nb,f,indent=1,ensure_ascii=False); f.write('\n')
