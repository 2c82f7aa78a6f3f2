import json,sys
nb=json.load(open(sys.argv[1]))
full = len(sys.argv)>2
for i,c in enumerate(nb['cells']):
    src=''.join(c['source'])
    tags=c.get('metadata',{}).get('tags',[])
    print(f"--- [{i}] {c['cell_type']} id={c.get('id')} tags={tags}")
    print(src if full else src[:600])
